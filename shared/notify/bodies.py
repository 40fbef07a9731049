"""A notification's bytes: dagq's JSON body (documented in docs/notifications.md), the payloads
of Slack and Microsoft Teams incoming webhooks, the CloudEvent of the Event Grid topic, and the
HMAC-SHA256 signature headers."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from shared.definition.workflow import NotifyFormat
from shared.notify.report import FailedTask, Report

SIGNATURE_HEADER = "X-Dagq-Signature"
"""``sha256=`` and the hex HMAC-SHA256, keyed with the webhook's ``secret``, of the timestamp
header's value, a ``.``, and the body's bytes."""
TIMESTAMP_HEADER = "X-Dagq-Timestamp"
"""When this delivery was signed (Unix seconds): refuse old ones to stop replays."""
DELIVERY_HEADER = "X-Dagq-Delivery"
"""The notification's id, the same on every retry of it: deliveries are at least once, so a
receiver that must act once dedupes by it."""
EVENT_HEADER = "X-Dagq-Event"

SCHEMA_VERSION = 1
_EMOJI = {"completed": "✅", "failed": "❌", "cancelled": "⚪", "task_failed": "⚠️"}


def event_type(event: str) -> str:
    """``dagq.workflow.completed``..., ``dagq.task.failed``."""
    return "dagq.task.failed" if event == "task_failed" else f"dagq.workflow.{event}"


def _task(task: FailedTask) -> dict[str, Any]:
    return {
        "name": task.name,
        "attempt": task.attempt,
        "exit_code": task.exit_code,
        "error": task.error,
        "log_tail": task.log_tail,
    }


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def json_body(report: Report, delivery: str) -> dict[str, Any]:
    """dagq's own body (``format: json``)."""
    return {
        "version": SCHEMA_VERSION,
        "type": event_type(report.event),
        "event": report.event,
        "delivery": delivery,
        "at": _iso(report.at),
        "workflow": {
            "id": report.workflow_id,
            "name": report.name,
            "status": report.status,
            "run": report.run,
            "params": report.params,
            "created_at": _iso(report.created_at),
            "finished_at": _iso(report.finished_at),
            "duration_s": report.duration_s,
            "error": report.error,
            "url": report.url,
        },
        "task": _task(report.task) if report.task is not None else None,
        "failed_tasks": [_task(t) for t in report.failed],
        "failed_count": report.failed_count,
        "cost": report.cost,
    }


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def headline(report: Report) -> str:
    """One line for chat: what happened to which run."""
    mark = _EMOJI.get(report.event, "")
    if report.event == "task_failed":
        task = report.task.name if report.task else "a task"
        return f"{mark} {report.name} ({report.workflow_id}): task {task} failed"
    return (
        f"{mark} {report.name} ({report.workflow_id}) {report.status}"
        f" after {_duration(report.duration_s)}"
    )


def _details(report: Report) -> list[str]:
    lines = []
    if report.params:
        lines.append("params: " + ", ".join(f"{k}={v}" for k, v in report.params.items()))
    shown = [report.task] if report.task is not None else report.failed
    for task in shown[:3]:
        code = f"exit {task.exit_code}" if task.exit_code is not None else (task.error or "")
        lines.append(f"{task.name} (attempt {task.attempt}) {code}".rstrip())
        lines += [f"    {line}" for line in task.log_tail[-5:]]
    if report.failed_count > len(shown[:3]) and report.task is None:
        lines.append(f"... {report.failed_count} failed tasks in all")
    if report.cost and "estimated_cost" in report.cost:
        lines.append(f"cost: {report.cost['estimated_cost']:.2f} {report.cost.get('currency', '')}")
    return lines


def slack_body(report: Report) -> dict[str, Any]:
    """A Slack incoming webhook's payload (``format: slack``)."""
    text = headline(report)
    if report.url:
        text += f" — <{report.url}|dashboard>"
    details = _details(report)
    if details:
        text += "\n```" + "\n".join(details) + "```"
    return {"text": text}


def teams_body(report: Report) -> dict[str, Any]:
    """A Teams incoming webhook's (Workflows) payload: one Adaptive Card (``format: teams``)."""
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": headline(report), "weight": "Bolder", "wrap": True},
            *[
                {"type": "TextBlock", "text": line, "wrap": True, "fontType": "Monospace"}
                for line in _details(report)
            ],
        ],
    }
    if report.url:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open dashboard", "url": report.url}]
    attachment = {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
    return {"type": "message", "attachments": [attachment]}


def render(report: Report, fmt: NotifyFormat, delivery: str) -> bytes:
    """The body of a webhook of format ``fmt``."""
    if fmt == "slack":
        doc = slack_body(report)
    elif fmt == "teams":
        doc = teams_body(report)
    else:
        doc = json_body(report, delivery)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def cloud_event(report: Report, delivery: str, source: str) -> dict[str, Any]:
    """The CloudEvent (1.0, structured JSON) sent to the Event Grid topic: ``data`` is the JSON
    body of a webhook."""
    return {
        "specversion": "1.0",
        "type": event_type(report.event),
        "source": source,
        "id": delivery,
        "time": _iso(report.at),
        "subject": f"workflows/{report.workflow_id}",
        "datacontenttype": "application/json",
        "data": json_body(report, delivery),
    }


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Dagq-Signature`` value: ``sha256=`` + hex HMAC-SHA256 of ``timestamp.body``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def headers(
    body_event: str, delivery: str, secret: str | None, body: bytes, now: float
) -> dict[str, str]:
    """The request headers of a webhook delivery (signed when it has a ``secret``)."""
    out = {
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "dagq-notify/1",
        EVENT_HEADER: event_type(body_event),
        DELIVERY_HEADER: delivery,
    }
    if secret is not None:
        stamp = str(int(now))
        out[TIMESTAMP_HEADER] = stamp
        out[SIGNATURE_HEADER] = signature(secret, stamp, body)
    return out
