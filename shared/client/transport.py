"""The client's HTTP transport: one httpx connection, and API errors turned into ``ApiError``."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from shared.client.config import KEY_HEADER, ClientConfig, check_credentials_travel_safely
from shared.client.entra import entra_auth
from shared.client.errors import ApiError, ApiUnreachableError

_M = TypeVar("_M", bound=BaseModel)

PROBLEM_BASE = "https://dagq.dev/problems/"
"""Every problem document dagq's API answers with has a ``type`` under this URI."""

_REASONS = {
    401: "Unauthorized: set DAGQ_API_KEY (or --api-key) to a function key of the app (and "
    "DAGQ_API_SCOPE when the deployment has Entra ID in front of the API)",
    403: "Forbidden: the function key was not accepted",
}


DELAYS_S = (0.0, 0.2, 0.4, 0.8)
"""Waits before each repeat of a request whose connection broke: at once (a fresh connection),
then backing off; the storage adapters' schedule (``shared.storage.repeat``, which the client
may not import: it stands alone)."""

REPEATED_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT"})
"""Requests repeated after a lost connection unless the caller says otherwise: reads, and PUTs
(which replace). A POST is repeated only where the caller knows it is idempotent (a submit with
an id, a cancel); a rerun, a purge and the DELETE of a workflow are not (a repeat of one that
took effect answers 409 or 404 instead of what happened)."""

_LOST = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
"""The connection broke under a request (the server closed a pooled connection as the request
went out, or before its answer). A refused connection (the API is not running) and a timeout
are not repeated: the first is reported at once, the second may still be running."""


REPEATS = "dagq_repeats"
"""A response's ``extensions`` key: how many times its request was sent again."""


class Transport:
    """Requests to one deployment's ``/api``; every error answer raises ``ApiError``."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout_s: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        auth = entra_auth()  # an Entra ID token when DAGQ_API_SCOPE is set (shared/client/entra.py)
        check_credentials_travel_safely(
            config.api_url, key=bool(config.api_key), token=auth is not None
        )
        headers = {"accept": "application/json", "user-agent": "dagq-client/0.1"}
        if config.api_key:
            headers[KEY_HEADER] = config.api_key
        self._http = httpx.Client(
            base_url=config.api_url + "/api",
            headers=headers,
            auth=auth,
            timeout=timeout_s,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int | Sequence[str]] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
        repeatable: bool | None = None,
    ) -> httpx.Response:
        """A successful response; ApiError for an error answer, ApiUnreachableError for none.
        A request whose connection broke is sent again (``DELAYS_S``) when ``repeatable`` (by
        default: its method is in ``REPEATED_METHODS``)."""
        headers = {"content-type": content_type} if content_type else None
        base_url = self.config.api_url
        if repeatable is None:
            repeatable = method.upper() in REPEATED_METHODS
        delays = DELAYS_S if repeatable else ()
        try:
            for attempt in range(len(delays) + 1):
                try:
                    response = self._http.request(
                        method, path, params=params, content=content, headers=headers
                    )
                    response.extensions = {**response.extensions, REPEATS: attempt}
                    break
                except _LOST:
                    if attempt == len(delays):
                        raise
                    time.sleep(delays[attempt] * random.uniform(0.8, 1.2))  # noqa: S311
        except httpx.TimeoutException as exc:
            raise ApiUnreachableError(
                f"the dagq API at {base_url} did not answer in time ({type(exc).__name__});"
                " is it running and reachable?"
            ) from None
        except httpx.TransportError as exc:
            raise ApiUnreachableError(
                f"cannot reach the dagq API at {base_url} ({exc or type(exc).__name__})."
                " Start the local stack with `make up`, or set DAGQ_API_URL"
                f" (URL from: {self.config.source})",
                lasting=isinstance(exc, httpx.ConnectError),
            ) from None
        if response.status_code >= 400:
            raise problem_error(response, self.config.source)
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The decoded JSON of a successful answer (``{}`` for an empty one)."""
        response = self.request(method, path, **kwargs)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                response.status_code,
                "The API returned something that is not JSON",
                snippet(response.text),
                url=str(response.url),
            ) from None

    def model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M:
        """A successful answer parsed as ``model`` (a response view)."""
        data = self.json(method, path, **kwargs)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise ApiError(
                200, "The API's answer has an unexpected shape", str(exc).splitlines()[0]
            ) from None


def segment(value: str) -> str:
    """One URL path segment, escaped (ids and task names are validated server-side too)."""
    return quote(value, safe="")


def payload(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a response; ApiError when it is not one."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ApiError(
            response.status_code,
            "The API returned something that is not a JSON object",
            snippet(response.text),
        )
    return data


def shape_error(response: httpx.Response, exc: ValidationError) -> ApiError:
    """The error for an answer that does not have the shape of its view."""
    return ApiError(
        response.status_code,
        "The API's answer has an unexpected shape",
        str(exc).splitlines()[0],
        url=str(response.url),
    )


def snippet(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (for error messages)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def problem_error(
    response: httpx.Response, source: str = "default"
) -> ApiError | ApiUnreachableError:
    """Turn an error response into ApiError, reading RFC 7807 problem details when present; a
    4xx that is no dagq problem (a 404 page, Azurite's XML) is ApiUnreachableError: the URL is
    not a dagq API (``source``: where the URL came from)."""
    status = response.status_code
    data: Any = None
    try:
        data = response.json()
    except ValueError:
        data = None
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    dagq = isinstance(data, dict) and (
        str(data.get("type", "")).startswith(PROBLEM_BASE) or kind == "application/problem+json"
    )
    if not dagq and 400 <= status < 500 and status not in _REASONS:
        return ApiUnreachableError(
            f"this is not a dagq API: {response.url} answered HTTP {status} ({kind}) to a dagq"
            f" request; set DAGQ_API_URL (or --api-url) to the app's URL, e.g."
            f" http://127.0.0.1:7071 for the local stack (URL from: {source})",
            lasting=True,
        )
    if isinstance(data, dict):
        errors = data.get("errors")
        error = ApiError(
            status,
            str(data.get("title") or _REASONS.get(status) or response.reason_phrase or "Error"),
            str(data["detail"]) if data.get("detail") is not None else None,
            errors if isinstance(errors, list) else None,
            type_=str(data["type"]) if data.get("type") else None,
            url=str(response.url),
        )
        error.extra = data
        return error
    title = _REASONS.get(status) or response.reason_phrase or f"HTTP {status}"
    error = ApiError(status, title, snippet(response.text) or None, url=str(response.url))
    error.extra = None
    return error
