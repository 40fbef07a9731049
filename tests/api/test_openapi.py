"""The API's three descriptions agree: the views (``shared.views``), the answers the app sends
(built from the views), and the committed OpenAPI document (schemas generated from the views). The
client parses with the views themselves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeVar

import httpx
import pytest

from devtools.testing.api_host import HostProcess
from shared import views
from shared.api import openapi
from shared.client import Client
from tests.api.documented import assert_documented, document

V = TypeVar("V", bound=views.View)

DIAMOND = """
name: views-diamond
tasks:
  - {name: a, kwargs: {cmd: "echo a"}}
  - {name: b, kwargs: {cmd: "echo b"}, depends_on: [a]}
"""


def test_committed_document_is_generated_from_the_views() -> None:
    assert openapi.main(["--check"]) == 0, "run: python -m shared.api.openapi"


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_every_reference_resolves_and_every_view_is_documented() -> None:
    components = document()["components"]
    for ref in set(_refs(document())):
        section, name = ref.removeprefix("#/components/").split("/")
        assert name in components[section], ref
    assert {model.__name__ for model in views.COMPONENTS} <= set(components["schemas"])


def _unknown(value: Any) -> list[str]:
    """Fields of a parsed answer that its views do not define (kept as extras)."""
    if isinstance(value, views.View):
        own = list(value.model_extra or {})
        return own + [name for field in value.__dict__.values() for name in _unknown(field)]
    if isinstance(value, dict):
        return [name for item in value.values() for name in _unknown(item)]
    if isinstance(value, list):
        return [name for item in value for name in _unknown(item)]
    return []


def _view(model: type[V], body: Any) -> V:
    """``body`` parsed as ``model``, with no field the views do not define."""
    view = model.model_validate(body)
    assert _unknown(view) == [], f"{model.__name__}: fields the views do not define"
    return view


@pytest.fixture(scope="module")
def http(api_only_host: HostProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_only_host.url, timeout=30) as client:
        yield client


@pytest.mark.azurite
@pytest.mark.subprocess
def test_answers_match_the_views_and_the_document(http: httpx.Client) -> None:
    yaml = {"Content-Type": "application/yaml"}
    created = http.post("/workflows", content=DIAMOND, headers=yaml, params={"id": "views-1"})
    assert created.status_code == 201
    _view(views.Submitted, assert_documented(created, "/workflows"))
    again = http.post("/workflows", content=DIAMOND, headers=yaml, params={"id": "views-1"})
    assert again.status_code == 200
    _view(views.Submitted, assert_documented(again, "/workflows"))

    listing = http.get("/workflows", params={"name": "views-"})
    page = _view(views.WorkflowPage, assert_documented(listing, "/workflows"))
    assert [item.id for item in page.items] == ["views-1"]

    full = _view(
        views.Workflow, assert_documented(http.get("/workflows/views-1"), "/workflows/{id}")
    )
    assert set(full.tasks) == {"a", "b"}
    bare = http.get("/workflows/views-1", params={"tasks": "false"})
    assert "tasks" not in assert_documented(bare, "/workflows/{id}")

    detail = http.get("/workflows/views-1/tasks/b")
    task = _view(views.TaskDetail, assert_documented(detail, "/workflows/{id}/tasks/{task}"))
    assert task.depends_on == ["a"]

    cancel = http.post("/workflows/views-1/cancel", params={"reason": "test"})
    accepted = _view(views.CancelAccepted, assert_documented(cancel, "/workflows/{id}/cancel"))
    assert accepted.cancel_requested is True
    assert "detail" not in cancel.json()


@pytest.mark.azurite
@pytest.mark.subprocess
def test_problems_match_the_document(http: httpx.Client) -> None:
    invalid = http.post(
        "/workflows", content="name: x\ntasks: [{name: a}]", headers={"Content-Type": "text/yaml"}
    )
    assert invalid.status_code == 400
    problem = _view(views.Problem, assert_documented(invalid, "/workflows"))
    assert problem.errors
    missing = http.get("/workflows/nope-404")
    assert missing.status_code == 404
    _view(views.Problem, assert_documented(missing, "/workflows/{id}"))
    malformed = http.get("/workflows/views-1/tasks/a%20b")
    assert malformed.status_code == 400
    _view(views.Problem, assert_documented(malformed, "/workflows/{id}/tasks/{task}"))
    pending = http.post("/workflows", content=DIAMOND, params={"id": "views-2"})
    assert pending.status_code == 201
    rerun = http.post("/workflows/views-2/retry")
    assert rerun.status_code == 409
    _view(views.Problem, assert_documented(rerun, "/workflows/{id}/retry"))


@pytest.mark.azurite
@pytest.mark.subprocess
def test_health_counts_the_events_nobody_consumed(
    http: httpx.Client, api_only_host: HostProcess
) -> None:
    before = _view(views.Health, assert_documented(http.get("/health"), "/health"))
    for n in range(3):
        response = http.post("/workflows", content=DIAMOND, params={"id": f"health-{n}"})
        assert response.status_code == 201
    submitted = _view(views.Health, assert_documented(http.get("/health"), "/health"))
    # The submits sent the roots' task messages themselves, and no event (issue 32).
    assert submitted.event_queue.depth == before.event_queue.depth
    for n in range(3):
        assert http.post(f"/workflows/health-{n}/cancel").status_code == 202
    after = _view(views.Health, assert_documented(http.get("/health"), "/health"))
    # No trigger runs in this host: every cancel's event is still on the queue.
    assert after.event_queue.depth == before.event_queue.depth + 3
    assert after.poison_queue.depth == 0
    assert after.coordinator.lease_held is False


@pytest.mark.azurite
@pytest.mark.subprocess
def test_the_client_parses_the_answers(api_only_host: HostProcess) -> None:
    with Client(api_only_host.url) as client:
        submitted = client.submit(DIAMOND, workflow_id="client-1")
        assert submitted.created
        assert client.get("client-1").tasks["b"].state == "pending"
        assert client.task("client-1", "b").depends_on == ["a"]
        assert "client-1" in [w.id for w in client.list(name="views-diamond").items]
        assert client.cancel("client-1").cancel_requested
        assert client.health()["status"] == "ok"


@pytest.mark.azurite
@pytest.mark.subprocess
def test_the_served_document_is_the_committed_one(http: httpx.Client) -> None:
    served = http.get("/openapi.json")
    assert served.status_code == 200
    assert json.loads(served.content) == document()
