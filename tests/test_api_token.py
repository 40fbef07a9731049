"""The client sends an Entra ID token when the deployment puts App Service authentication in front
of the API (DAGQ_API_SCOPE), over real HTTP to a local server that records what it receives."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.client import Client
from shared.client import entra as api_token
from shared.client.entra import EntraAuth, entra_auth
from shared.errors import DagqError


@dataclass
class Token:
    token: str
    expires_on: float


class Credential:
    """A credential of our own behind the TokenSource port: hands out numbered tokens."""

    def __init__(self, lifetime_s: float = 3600) -> None:
        self.scopes: list[str] = []
        self.lifetime_s = lifetime_s

    def get_token(self, *scopes: str) -> Token:
        import time

        self.scopes.extend(scopes)
        return Token(f"token-{len(self.scopes)}", time.time() + self.lifetime_s)


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, str | None]]]]:
    seen: list[dict[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(
                {"auth": self.headers["Authorization"], "key": self.headers["x-functions-key"]}
            )
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", seen
    httpd.shutdown()
    httpd.server_close()


def test_with_a_scope_the_client_sends_a_token_and_the_function_key(
    server: tuple[str, list[dict[str, str | None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    credential = Credential()
    monkeypatch.setattr(api_token, "_default_credential", lambda: credential)
    monkeypatch.setenv("DAGQ_API_SCOPE", "api://1111/.default")
    with Client(url, "function-key") as client:
        client.health()
        client.health()
    assert seen == [{"auth": "Bearer token-1", "key": "function-key"}] * 2  # one token, reused
    assert credential.scopes == ["api://1111/.default"]


def test_without_a_scope_no_token_is_asked_for(
    server: tuple[str, list[dict[str, str | None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    monkeypatch.delenv("DAGQ_API_SCOPE", raising=False)
    monkeypatch.setattr(api_token, "_default_credential", lambda: pytest.fail("asked"))
    with Client(url, "function-key") as client:
        client.health()
    assert seen == [{"auth": None, "key": "function-key"}]
    assert entra_auth({}) is None


def test_a_token_about_to_expire_is_renewed() -> None:
    credential = Credential(lifetime_s=api_token.RENEW_BEFORE_S - 1)
    auth = EntraAuth("api://1111/.default", credential)
    assert auth.token() == "token-1"
    assert auth.token() == "token-2"  # would expire within the renewal margin


def test_no_token_is_a_clear_error() -> None:
    class Failing:
        def get_token(self, *scopes: str) -> Token:
            raise RuntimeError("DefaultAzureCredential failed to retrieve a token")

    with pytest.raises(DagqError, match=r"no Entra ID token could be obtained.*az login"):
        EntraAuth("api://1111/.default", Failing()).token()


def test_the_client_asks_for_the_scope_the_deployment_outputs(
    server: tuple[str, list[dict[str, str | None]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # az login users get a token only for the delegated scope the app exposes and pre-authorizes
    # for the Azure CLI (infra/entra/expose-api.sh): the client passes DAGQ_API_SCOPE unchanged.
    from tests.infra.bicep_model import MODULES, Template

    client_id = "11111111-2222-3333-4444-555555555555"
    app = Template(MODULES / "functionapp.bicep", {"apiAuthClientId": client_id})
    scope = app.evaluate(app.outputs["apiScope"]["value"])
    url, _ = server
    credential = Credential()
    monkeypatch.setattr(api_token, "_default_credential", lambda: credential)
    monkeypatch.setenv("DAGQ_API_SCOPE", scope)
    with Client(url, "function-key") as client:
        client.health()
    assert credential.scopes == [f"api://{client_id}/user_impersonation"]
