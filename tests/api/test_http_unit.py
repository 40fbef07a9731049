"""The HTTP shell without a server: request parsing, and problem responses for unexpected errors."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

from shared.api.http import guarded
from shared.api.problems import problem_for
from shared.api.request import parse_definition_body
from shared.errors import CodecError, ConfigError, DefinitionError, Issue, RequestError


def request(body: bytes = b"name: x", headers: dict[str, str] | None = None) -> func.HttpRequest:
    return func.HttpRequest(
        "POST", "http://h/api/workflows", headers=headers or {}, params={}, body=body
    )


@pytest.mark.parametrize(
    ("content_type", "fmt"),
    [
        ("application/json", "json"),
        ("Application/JSON; charset=utf-8", "json"),
        ("application/yaml", "yaml"),
        ("application/x-yaml", "yaml"),
        ("text/yaml", "yaml"),
        ("text/plain", None),
        (None, None),
    ],
)
def test_accepted_media_types(content_type: str | None, fmt: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    assert parse_definition_body(request(headers=headers), 100) == ("name: x", fmt)


def test_declared_length_over_the_limit_is_413_before_reading() -> None:
    req = request(b"x", {"Content-Length": "5000"})
    with pytest.raises(RequestError) as caught:
        parse_definition_body(req, 100)
    assert caught.value.http_status == 413


def test_utf8_bom_is_accepted() -> None:
    assert parse_definition_body(request("\ufeffname: é".encode()), 100)[0] == "name: é"


async def test_unexpected_errors_hide_their_details() -> None:
    async def boom(req: func.HttpRequest) -> func.HttpResponse:
        raise RuntimeError("secret at /srv/app/internal.py line 3")

    response = await guarded(request(), boom)
    assert response.status_code == 500
    assert response.mimetype == "application/problem+json"
    body = json.loads(response.get_body())
    text = json.dumps(body)
    assert "secret" not in text
    assert "Traceback" not in text
    assert body["ref"]  # the log line that has the trace carries the same reference
    assert body["instance"] == "/api/workflows"


def test_dagq_errors_map_to_statuses() -> None:
    invalid = problem_for(DefinitionError([Issue("tasks.a.cmd", "missing", "a")]))
    assert invalid.status == 400
    assert invalid.members["errors"] == [
        {"location": "tasks.a.cmd", "task": "a", "message": "missing"}
    ]
    assert problem_for(ConfigError("no storage")).status == 503
    assert problem_for(CodecError("corrupt")).status == 500
    assert problem_for(KeyError("x")).detail.startswith("an unexpected error")
