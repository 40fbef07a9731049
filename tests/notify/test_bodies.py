"""A notification's bytes (issue 29): dagq's JSON body as docs/notifications.md documents it, the
Slack and Teams payloads, the CloudEvent of the Event Grid topic (never sent in tests), and the
signature a receiver checks."""

from __future__ import annotations

import hashlib
import hmac
import json

from shared.notify import bodies
from shared.notify.report import FailedTask, Report
from shared.settings import Settings

TRAIN = FailedTask("train", 3, 137, "exit 137", ["epoch 9", "Killed"])


def report(**changes: object) -> Report:
    fields: dict[str, object] = {
        "event": "failed",
        "workflow_id": "nightly-20261204T0200Z",
        "name": "nightly",
        "status": "failed",
        "run": 1,
        "params": {"lr": 0.001},
        "created_at": 1_800_000_000.0,
        "finished_at": 1_800_003_725.0,
        "at": 1_800_003_725.5,
        "url": "https://func-x.azurewebsites.net/api/ui#/runs/nightly-20261204T0200Z",
        "error": "task train failed",
        "task": None,
        "failed": [TRAIN],
        "failed_count": 1,
        "cost": {"currency": "USD", "estimated_cost": 4.2, "gpu_hours": 2.0, "cpu_hours": 0.1},
    }
    fields.update(changes)
    return Report(**fields)  # type: ignore[arg-type]


def test_the_json_body_holds_what_the_docs_promise() -> None:
    body = json.loads(bodies.render(report(), "json", "d-1"))
    assert set(body) == {
        "version", "type", "event", "delivery", "at", "workflow", "task", "failed_tasks",
        "failed_count", "cost",
    }  # fmt: skip
    assert body["type"] == "dagq.workflow.failed"
    assert body["delivery"] == "d-1"
    assert body["workflow"]["duration_s"] == 3725.0
    assert body["workflow"]["params"] == {"lr": 0.001}
    assert body["workflow"]["finished_at"] == "2027-01-15T09:02:05Z"
    assert body["failed_tasks"] == [
        {"name": "train", "attempt": 3, "exit_code": 137, "error": "exit 137",
         "log_tail": ["epoch 9", "Killed"]}
    ]  # fmt: skip
    assert body["cost"]["estimated_cost"] == 4.2


def test_slack_and_teams_payloads() -> None:
    slack = json.loads(bodies.render(report(), "slack", "d-1"))
    assert set(slack) == {"text"}
    assert "nightly (nightly-20261204T0200Z) failed after 1h 02m" in slack["text"]
    assert (
        "<https://func-x.azurewebsites.net/api/ui#/runs/nightly-20261204T0200Z|dashboard>"
        in (slack["text"])
    )
    assert "Killed" in slack["text"]
    teams = json.loads(bodies.render(report(), "teams", "d-1"))
    assert teams["type"] == "message"
    [attachment] = teams["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard"
    assert card["actions"][0]["url"].endswith("#/runs/nightly-20261204T0200Z")
    assert "failed after 1h 02m" in card["body"][0]["text"]


def test_a_task_failure_names_its_task() -> None:
    body = json.loads(bodies.render(report(event="task_failed", task=TRAIN), "json", "d"))
    assert body["type"] == "dagq.task.failed"
    assert body["task"]["name"] == "train"
    slack = json.loads(bodies.render(report(event="task_failed", task=TRAIN), "slack", "d"))
    assert "task train failed" in slack["text"]


def test_the_cloud_event() -> None:
    event = bodies.cloud_event(report(), "d-9", "/dagq/prod")
    assert event["specversion"] == "1.0"
    assert event["type"] == "dagq.workflow.failed"
    assert event["source"] == "/dagq/prod"
    assert event["id"] == "d-9"
    assert event["subject"] == "workflows/nightly-20261204T0200Z"
    assert event["datacontenttype"] == "application/json"
    assert event["data"] == bodies.json_body(report(), "d-9")


def test_signed_headers_verify_and_unsigned_have_none() -> None:
    body = b'{"x":1}'
    headers = bodies.headers("failed", "d-1", "k3y", body, 1_800_000_000.4)
    assert headers["X-Dagq-Timestamp"] == "1800000000"
    expected = hmac.new(b"k3y", b"1800000000." + body, hashlib.sha256).hexdigest()
    assert headers["X-Dagq-Signature"] == f"sha256={expected}"
    assert headers["X-Dagq-Delivery"] == "d-1"
    assert headers["X-Dagq-Event"] == "dagq.workflow.failed"
    assert "X-Dagq-Signature" not in bodies.headers("failed", "d-1", None, body, 0.0)


def test_an_empty_eventgrid_setting_means_none() -> None:
    settings = Settings.model_validate(
        {"DAGQ_STORAGE": "UseDevelopmentStorage=true", "DAGQ_EVENTGRID_ENDPOINT": ""}
    )
    assert settings.eventgrid_endpoint is None
