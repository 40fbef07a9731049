"""Structured log records: task dimensions in text and JSON; App Insights optional."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator

import pytest

from worker_agent.telemetry import JsonFormatter, TextFormatter, setup_logging, task_logger


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def record(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    log = task_logger(worker="w1").bind(queue="gpu").bind(workflow="wf", task="train", attempt=2)
    with caplog.at_level(logging.INFO, logger="worker_agent"):
        log.info("running %s", "x", extra={"task": "override"})
    (rec,) = caplog.records
    return rec


def test_records_carry_the_task_dimensions(caplog: pytest.LogCaptureFixture) -> None:
    rec = record(caplog)
    body = json.loads(JsonFormatter().format(rec))
    assert body["message"] == "running x"
    assert body["level"] == "INFO"
    assert {k: body[k] for k in ("worker", "queue", "workflow", "task", "attempt")} == {
        "worker": "w1",
        "queue": "gpu",
        "workflow": "wf",
        "task": "override",
        "attempt": 2,
    }
    assert "wf/override#2 q=gpu running x" in TextFormatter().format(rec)


def test_app_insights_without_its_package_warns_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "azure.monitor.opentelemetry", None)  # import fails
    setup_logging(
        "INFO", "text", env={"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=x"}
    )
    assert "azure-monitor-opentelemetry is not installed" in capsys.readouterr().err


def test_entra_authentication_string_selects_the_identity() -> None:
    from worker_agent.telemetry import entra_client_id

    assert entra_client_id("ClientId=abc;Authorization=AAD") == "abc"
    assert entra_client_id("Authorization=AAD") == ""  # the default (system) identity
    assert entra_client_id("") is None
    assert entra_client_id("InstrumentationKey=x") is None
