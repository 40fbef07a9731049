"""Structured logs: every record about a task carries workflow, task, attempt, queue and worker.

Records go to stderr as text or JSON lines. When ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set,
they are also exported to Application Insights through azure-monitor-opentelemetry (the ``worker``
extra), where the dimensions become custom properties. That package is imported only then, so a
worker without it still starts (with a warning).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

DIMENSIONS = ("worker", "queue", "workflow", "task", "attempt")
"""The structured fields a record may carry (as ``extra``), in display order."""

LOGGER_NAME = "worker_agent"


class TaskLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter that adds its dimensions to every record, merged with per-call extras."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs

    def bind(self, **dims: object) -> TaskLogger:
        """A child adapter with more dimensions."""
        return TaskLogger(self.logger, {**(self.extra or {}), **dims})


def task_logger(name: str = LOGGER_NAME, **dims: object) -> TaskLogger:
    """A logger for ``name`` carrying ``dims`` (worker=..., queue=..., workflow=...)."""
    return TaskLogger(logging.getLogger(name), dims)


def _dims(record: logging.LogRecord) -> dict[str, object]:
    return {key: getattr(record, key) for key in DIMENSIONS if hasattr(record, key)}


class TextFormatter(logging.Formatter):
    """``time level logger [workflow/task#attempt queue worker] message``."""

    def format(self, record: logging.LogRecord) -> str:
        dims = _dims(record)
        where = ""
        if "workflow" in dims:
            where = f"{dims['workflow']}/{dims.get('task', '?')}#{dims.get('attempt', '?')} "
        if "queue" in dims:
            where += f"q={dims['queue']} "
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line = f"{stamp}Z {record.levelname:<7} {where}{record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, the dimensions, and exc if any."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, object] = {
            "ts": round(record.created, 3),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_dims(record),
        }
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


def setup_logging(
    level: str = "INFO", fmt: str = "text", env: Mapping[str, str] | None = None
) -> None:
    """Configure the worker's logging once, at start-up."""
    env = os.environ if env is None else env
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)  # the SDKs' chatter stays out unless it matters
    logging.getLogger(LOGGER_NAME).setLevel(level)
    if env.get("APPLICATIONINSIGHTS_CONNECTION_STRING"):
        _setup_azure_monitor(env.get("APPLICATIONINSIGHTS_AUTHENTICATION_STRING", ""))


def entra_client_id(authentication: str) -> str | None:
    """For ``APPLICATIONINSIGHTS_AUTHENTICATION_STRING`` ("ClientId=<id>;Authorization=AAD", as
    the deployment sets it): the identity's client id ('' for the default identity), or None when it
    does not ask for Entra ID authentication."""
    fields = dict(
        part.split("=", 1) for part in authentication.split(";") if "=" in part
    )  # fmt: skip
    if fields.get("Authorization", "").upper() != "AAD":
        return None
    return fields.get("ClientId", "")


def _credential(authentication: str) -> dict[str, Any]:
    """``configure_azure_monitor`` arguments for Entra ID ingestion (App Insights with local auth
    off accepts nothing else)."""
    client_id = entra_client_id(authentication)
    if client_id is None:
        return {}
    from azure.identity import DefaultAzureCredential

    return {"credential": DefaultAzureCredential(managed_identity_client_id=client_id or None)}


def _setup_azure_monitor(authentication: str) -> None:
    log = logging.getLogger(LOGGER_NAME)
    try:
        from azure.monitor.opentelemetry import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
            configure_azure_monitor,
        )
    except ImportError:
        log.warning(
            "APPLICATIONINSIGHTS_CONNECTION_STRING is set but azure-monitor-opentelemetry is not "
            "installed: logs stay local. Install the worker extra: pip install 'dagq[worker]'"
        )
        return
    try:
        # Only the worker's own logger: its records carry the task dimensions.
        configure_azure_monitor(logger_name=LOGGER_NAME, **_credential(authentication))
    except Exception as exc:  # a telemetry problem must never stop the worker
        log.warning("Application Insights export is off: %s", exc)
    else:
        log.info("exporting logs to Application Insights")
