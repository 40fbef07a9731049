"""Parsing and checking an HTTP request before anything is read or written: the definition body
(size, emptiness, media type, charset, encoding), path parameters, and query parameters.

Every problem raises ``RequestError`` (or ``InvalidIdError``) with the status and a message that
says what to send instead; a rejected request touches no storage.
"""

from __future__ import annotations

from typing import Any, Literal

import azure.functions as func

from shared.api.problems import bad_request
from shared.errors import RequestError
from shared.limits import MAX_REFRESH_TASKS

YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
JSON_TYPES = frozenset({"application/json"})
DETECT_TYPES = frozenset({"text/plain", ""})
"""Media types accepted for a definition; ``text/plain`` or none means "detect JSON or YAML"."""


def route_param(req: func.HttpRequest, name: str) -> str:
    value: str | None = req.route_params.get(name)
    if value is None:  # the route template guarantees it; a misrouted call is a bug
        raise bad_request(f"missing path parameter {name!r}")
    return value


def media_type(req: func.HttpRequest) -> tuple[str, dict[str, str]]:
    raw = req.headers.get("content-type") or ""
    media, _, rest = raw.partition(";")
    params = {}
    for item in rest.split(";"):
        key, sep, value = item.partition("=")
        if sep:
            params[key.strip().lower()] = value.strip().strip('"').lower()
    return media.strip().lower(), params


def parse_definition_body(
    req: func.HttpRequest, max_bytes: int
) -> tuple[str, Literal["json", "yaml"] | None]:
    """The definition text and its format (``json``, ``yaml``, or None to detect).

    Checks, in order: size (413), emptiness (400), media type and charset (415), UTF-8 (400).
    """
    declared = req.headers.get("content-length")
    declared = (declared or "").strip()
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(int(declared), max_bytes)
    body = req.get_body() or b""
    if len(body) > max_bytes:
        raise _too_large(len(body), max_bytes)
    if not body.strip():
        raise bad_request(
            "the request body is empty: send a workflow definition (YAML or JSON)",
            problem_type="empty-body",
        )
    media, params = media_type(req)
    fmt: Literal["json", "yaml"] | None
    if media in JSON_TYPES:
        fmt = "json"
    elif media in YAML_TYPES:
        fmt = "yaml"
    elif media in DETECT_TYPES:
        fmt = None
    else:
        raise RequestError(
            415,
            f"unsupported Content-Type {media[:80]!r}: send the definition as application/json,"
            " application/yaml (or application/x-yaml, text/yaml) or text/plain",
            problem_type="unsupported-media-type",
        )
    charset = params.get("charset")
    if charset and charset.replace("-", "").replace("_", "") != "utf8":
        raise RequestError(
            415,
            f"unsupported charset {charset[:40]!r}: definitions must be UTF-8",
            problem_type="unsupported-media-type",
        )
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise bad_request(
            f"the request body is not valid UTF-8 (byte {exc.start}): save the definition as UTF-8",
            problem_type="invalid-encoding",
        ) from None
    return text, fmt


def _too_large(size: int, max_bytes: int) -> RequestError:
    return RequestError(
        413,
        f"the definition is {size} bytes; the limit is {max_bytes} bytes"
        " (DAGQ_MAX_DEFINITION_BYTES). Use foreach to generate many similar tasks instead of"
        " listing them",
        problem_type="definition-too-large",
    )


def submit_id(req: func.HttpRequest) -> str | None:
    from shared.names import check_workflow_id

    if "id" not in req.params:
        return None
    workflow_id: str = req.params["id"]
    check_workflow_id(workflow_id)
    return workflow_id


def cache_params(req: func.HttpRequest) -> dict[str, Any]:
    """``?no_cache=true`` and ``?refresh=TASK[,TASK]`` of a submit (result caching overrides)."""
    from shared.api.query import SubmitQuery, parse_query
    from shared.names import safe_name_problem

    query = parse_query(req, SubmitQuery)
    refresh = [name for name in query.refresh.split(",") if name]
    if len(refresh) > MAX_REFRESH_TASKS:
        raise bad_request(f"refresh names more than {MAX_REFRESH_TASKS} tasks")
    for name in refresh:
        problem = safe_name_problem(name)
        if problem:
            raise bad_request(f"refresh: {problem}")
    return {"no_cache": query.no_cache, "refresh": tuple(refresh)}


def list_params(req: func.HttpRequest) -> dict[str, Any]:
    from shared.api.query import ListQuery, parse_query

    query = parse_query(req, ListQuery)
    return {
        "status": query.status,
        "name_prefix": query.name,
        "limit": query.limit,
        "continuation": query.next or query.continuation,
    }
