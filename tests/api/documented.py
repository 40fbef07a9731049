"""Checks of real API answers against the committed OpenAPI document (shared/api/openapi.json)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import httpx
import jsonschema_rs

from devtools.testing.api_host import REPO_ROOT


@cache
def document() -> dict[str, Any]:
    """The committed OpenAPI document."""
    data: dict[str, Any] = json.loads((REPO_ROOT / "shared" / "api" / "openapi.json").read_text())
    return data


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node and node["$ref"].startswith("#/components/responses/"):
        node = document()["components"]["responses"][node["$ref"].rsplit("/", 1)[1]]
    return node


def response_schema(path: str, method: str, status: int, media_type: str) -> dict[str, Any]:
    """The schema the document gives for this answer (AssertionError if it documents none)."""
    responses = document()["paths"][path][method.lower()]["responses"]
    assert str(status) in responses, f"{method} {path}: {status} is not documented"
    content = _resolve(responses[str(status)]).get("content", {})
    assert media_type in content, f"{method} {path} {status}: {media_type} is not documented"
    schema: dict[str, Any] = content[media_type].get("schema", {})
    return schema


def assert_documented(response: httpx.Response, path: str) -> Any:
    """Assert ``response`` is what the document says ``path`` answers; return its JSON body.

    ``path`` is the documented template (``/workflows/{id}``), not the requested URL.
    """
    media_type = response.headers.get("content-type", "").split(";")[0].strip()
    if response.status_code >= 400:
        assert media_type == "application/problem+json", response.text
    schema = response_schema(path, response.request.method, response.status_code, media_type)
    body = response.json()
    root = {**schema, "components": document()["components"]}
    errors = [error.message for error in jsonschema_rs.Draft202012Validator(root).iter_errors(body)]
    assert errors == [], f"{response.request.method} {path} {response.status_code}: {errors}"
    return body
