"""The events (worker or API -> coordinator, on a partition's event queue) and the notification
message (coordinator -> ``{prefix}-notify``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from shared.errors import MessageError
from shared.limits import ERROR_TAIL_CHARS, MAX_COUNTER, MAX_EVENT_REASON_CHARS, MAX_MESSAGE_BYTES
from shared.messages.base import SignedMessage, _Message
from shared.messages.fields import (
    Attempt,
    Incarnation,
    TaskName,
    Timestamp,
    UpstreamDigest,
    WorkerName,
    WorkflowId,
    explain,
    message_text,
)
from shared.messages.tasks import OutputRef
from shared.names import ResourceNames


class ActivateEvent(SignedMessage):
    """Sent by the API after creating a workflow: dispatch its root tasks."""

    kind: Literal["activate"] = "activate"
    workflow_id: WorkflowId


class CancelEvent(SignedMessage):
    """Sent by the API on cancel (the durable flag in the index backs it up if it is lost).

    ``incarnation``: the workflow the API read (None from the cancel-poll sweep, which acts on
    whatever the id holds now, and from older deployments)."""

    kind: Literal["cancel"] = "cancel"
    workflow_id: WorkflowId
    incarnation: Incarnation | None = None
    reason: str | None = Field(default=None, max_length=MAX_EVENT_REASON_CHARS)


class RetryEvent(SignedMessage):
    """Sent by the API to rerun a finished workflow from its failures.

    ``run`` is the run number the API saw finished; a duplicate or stale retry (the state has moved
    to a later run) changes nothing.
    """

    kind: Literal["retry"] = "retry"
    workflow_id: WorkflowId
    run: int = Field(ge=1, le=MAX_COUNTER)
    incarnation: Incarnation | None = None
    """The workflow the API read (None from older deployments)."""


class _TaskEvent(_Message):
    workflow_id: WorkflowId
    task: TaskName
    attempt: Attempt
    incarnation: Incarnation | None = None
    """The task message's (None from older workers): applied only to the same incarnation."""
    worker: WorkerName | None = None
    upstream_digest: UpstreamDigest | None = None
    """The task message's (None: it had none, or an older worker): the inputs it ran on."""

    def _check_blobs(self, output: OutputRef | None, log_blob: str | None) -> None:
        """Blob names must be the conventional ones of this attempt (never another container's
        blob, nor another workflow's, nor another incarnation's): its names under the event's
        incarnation, or the flat layout's (a workflow from before state version 6)."""
        key = (self.workflow_id, self.task, self.attempt)
        layouts = (None,) if self.incarnation is None else (self.incarnation, None)
        logs = [ResourceNames.log_blob(*key, inc) for inc in layouts]
        if log_blob is not None and log_blob not in logs:
            raise ValueError(
                f"log_blob {log_blob[:200]!r} is not this attempt's log blob {logs[0]!r}"
            )
        blob = output.blob if output is not None else None
        outputs = [ResourceNames.output_blob(*key, inc) for inc in layouts]
        if blob is not None and blob not in outputs:
            raise ValueError(
                f"output.blob {blob[:200]!r} is not this attempt's output blob {outputs[0]!r}"
            )


class TaskStartedEvent(_TaskEvent):
    """A worker has been running the attempt a few seconds (short tasks report only an end)."""

    kind: Literal["started"] = "started"
    started_at: Timestamp


class TaskCompletedEvent(_TaskEvent):
    """The attempt exited 0."""

    kind: Literal["completed"] = "completed"
    started_at: Timestamp
    finished_at: Timestamp
    output: OutputRef | None = None
    log_blob: str | None = None

    @model_validator(mode="after")
    def _conventional_blobs(self) -> TaskCompletedEvent:
        self._check_blobs(self.output, self.log_blob)
        return self


FailureReason = Literal["exit", "timeout", "cancelled", "error", "not_started"]
"""Why an attempt failed: non-zero exit, killed at timeout_s, killed because the workflow was
cancelled, the worker could not run it (bad cwd, invalid output...), or never started in time."""


class TaskFailedEvent(_TaskEvent):
    """The attempt did not succeed."""

    kind: Literal["failed"] = "failed"
    started_at: Timestamp | None = None
    finished_at: Timestamp
    reason: FailureReason = "exit"
    exit_code: int | None = Field(default=None, ge=-(2**31), lt=2**31)
    error: str = Field(default="", max_length=ERROR_TAIL_CHARS)
    log_blob: str | None = None

    @model_validator(mode="after")
    def _conventional_blobs(self) -> TaskFailedEvent:
        self._check_blobs(None, self.log_blob)
        return self


Event = Annotated[
    ActivateEvent
    | CancelEvent
    | RetryEvent
    | TaskStartedEvent
    | TaskCompletedEvent
    | TaskFailedEvent,
    Field(discriminator="kind"),
]
TaskEvent = TaskStartedEvent | TaskCompletedEvent | TaskFailedEvent

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class NotifyMessage(SignedMessage):
    """Coordinator -> ``{prefix}-notify``: tell ``target`` (None: Event Grid) of ``event``."""

    kind: Literal["notify"] = "notify"
    workflow_id: WorkflowId
    incarnation: Incarnation | None = None
    run: int = Field(default=1, ge=0, le=MAX_COUNTER)
    event: Literal["completed", "failed", "cancelled", "task_failed"]
    task: TaskName | None = None
    at: Timestamp
    target: int | None = Field(default=None, ge=0, le=MAX_COUNTER)
    tries: int = Field(default=0, ge=0, le=MAX_COUNTER)  # failed so far (shared.notify)
    first_at: Timestamp | None = None  # the first try's time: retries end a bound after it


def decode_event(raw: str | bytes) -> Event:
    """Parse an event from the event queue; raise MessageError (with the reason) if malformed or
    out of bounds."""
    text = message_text(raw)
    if len(text) > MAX_MESSAGE_BYTES:  # characters <= bytes: cheap, and enough to bound parsing
        raise MessageError(f"malformed event: longer than {MAX_MESSAGE_BYTES} bytes")
    try:
        return _EVENT_ADAPTER.validate_json(text)
    except ValidationError as exc:
        raise MessageError(f"malformed event: {explain(exc)}") from None
