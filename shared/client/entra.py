"""Entra ID tokens for the dagq API, when the deployment puts App Service authentication in front.

A deployment with ``apiAuthClientId`` set (infra/README.md, "Entra ID in front of the API") answers
401 to any request without a token for its app registration; its ``DAGQ_API_SCOPE`` output names
the scope to ask for: ``api://<client id>/user_impersonation``, the delegated scope the app
registration exposes and pre-authorizes the Azure CLI for (infra/entra/expose-api.sh), so an
``az login`` user gets a token without a consent prompt (AADSTS65001). A service principal or
managed identity sets ``api://<client id>/.default`` instead (client-credential flows accept only
``.default``). The client asks for ``DAGQ_API_SCOPE`` exactly as given. With it set, the client gets
a token with azure-identity's ``DefaultAzureCredential`` (``az login``, a managed identity, a CI
service principal...) and sends it as ``Authorization: Bearer``, renewing it before it expires. The
function key (``DAGQ_API_KEY``) is still sent: the functions check it behind the authentication.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Mapping
from typing import Any, Protocol

import httpx

from shared.errors import DagqError

SCOPE_ENV = "DAGQ_API_SCOPE"
RENEW_BEFORE_S = 300.0
"""A token is renewed this long before it expires, so a request never carries an expired one."""


class TokenSource(Protocol):
    """What azure-identity credentials offer: ``get_token(scope)`` -> ``.token``, ``.expires_on``
    (a port, so tests can hand in a credential of their own)."""

    def get_token(self, *scopes: str) -> Any: ...


def _default_credential() -> TokenSource:
    from azure.identity import DefaultAzureCredential  # the CLI imports it only when needed

    credential: TokenSource = DefaultAzureCredential()
    return credential


class EntraAuth(httpx.Auth):
    """Adds ``Authorization: Bearer <token for scope>`` to every request."""

    def __init__(self, scope: str, credential: TokenSource | None = None) -> None:
        self.scope = scope
        self._credential = credential
        self._token: str | None = None
        self._expires_on = 0.0

    def token(self) -> str:
        """A token valid for at least ``RENEW_BEFORE_S`` more seconds."""
        if self._token is None or time.time() > self._expires_on - RENEW_BEFORE_S:
            try:
                if self._credential is None:
                    self._credential = _default_credential()
                access = self._credential.get_token(self.scope)
            except Exception as exc:  # azure-identity raises several unrelated types
                raise DagqError(
                    f"{SCOPE_ENV} is set ({self.scope}) but no Entra ID token could be obtained: "
                    f"{exc}. Sign in with `az login` (or give this machine a managed identity)"
                ) from None
            self._token, self._expires_on = str(access.token), float(access.expires_on)
        return self._token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


def entra_auth(env: Mapping[str, str] | None = None) -> EntraAuth | None:
    """The client's authentication when ``DAGQ_API_SCOPE`` is set; None: function keys only."""
    scope = (os.environ if env is None else env).get(SCOPE_ENV, "").strip()
    return EntraAuth(scope) if scope else None
