"""Every message shape that crosses a process boundary through a queue, in one place.

- ``TaskMessage``: coordinator -> worker, on a task queue (``{prefix}-q-{queue}``).
- ``Event``: worker or API -> coordinator, on the event queue (``{prefix}-events``).

Encoding, one convention for every queue: compact UTF-8 JSON sent as plain text (the Functions host
is configured with ``"messageEncoding": "none"`` to match). Every message dagq writes stays below
``MESSAGE_BUDGET_BYTES`` whatever the workflow: outputs and fan-in lists that would not fit travel
as blob references instead.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from shared.errors import MessageError
from shared.partitions import MAX_PARTITIONS

MESSAGE_BUDGET_BYTES = 48 * 1024
"""What dagq allows itself per message (Azure's hard limit is 64 KiB; XML escaping of JSON quotes by
the SDK and headroom for future fields take the rest)."""

INLINE_OUTPUT_BYTES = 4 * 1024
"""A task output (JSON) up to this size travels inline in its event and lives in the state blob;
larger outputs are uploaded to the outputs container and referenced."""

ERROR_TAIL_CHARS = 2000
"""How much of a failed task's error text (stderr tail) an event carries."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputRef(_Message):
    """A task attempt's JSON output: the value itself when small, else where it is stored."""

    inline: JsonValue = None
    """The output value, when stored inline (``blob`` is then None)."""
    blob: str | None = None
    """Blob name in the outputs container, when the output is too large to inline."""
    size: int = Field(default=0, ge=0)
    """Size of the output's JSON encoding in bytes."""


class TaskMessage(_Message):
    """One attempt of one task, sent to the task queue of its hardware class."""

    v: Literal[1] = 1
    workflow_id: str
    task: str
    attempt: int = Field(ge=1)
    queue: str
    cmd: str
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    upstream: dict[str, OutputRef] | None = None
    """Parent name -> output, for parents that produced one, when the whole map fits the budget."""
    upstream_blob: str | None = None
    """Otherwise: blob name (outputs container) of a JSON object ``{parent: OutputRef}``."""
    partition: int = Field(default=0, ge=0, lt=MAX_PARTITIONS)
    """The workflow's partition: the worker reports to that partition's event queue (a number,
    not a queue name: the worker builds the name itself, never taking one from a message)."""

    @property
    def key(self) -> str:
        """``{workflow}/{task}/{attempt}``: unique forever (attempt numbers only grow)."""
        return f"{self.workflow_id}/{self.task}/{self.attempt}"


# -- events ----------------------------------------------------------------------------------


class ActivateEvent(_Message):
    """Sent by the API after creating a workflow: dispatch its root tasks."""

    kind: Literal["activate"] = "activate"
    workflow_id: str


class CancelEvent(_Message):
    """Sent by the API on cancel (the durable flag in the index backs it up if it is lost)."""

    kind: Literal["cancel"] = "cancel"
    workflow_id: str
    reason: str | None = None


class RetryEvent(_Message):
    """Sent by the API to rerun a finished workflow from its failures.

    ``run`` is the run number the API saw finished; a duplicate or stale retry (the state has moved
    to a later run) changes nothing.
    """

    kind: Literal["retry"] = "retry"
    workflow_id: str
    run: int = Field(ge=1)


class _TaskEvent(_Message):
    workflow_id: str
    task: str
    attempt: int = Field(ge=1)
    worker: str | None = None


class TaskStartedEvent(_TaskEvent):
    """A worker has been running the attempt for a few seconds (short tasks skip this event and
    report ``started_at`` in their completion instead)."""

    kind: Literal["started"] = "started"
    started_at: float


class TaskCompletedEvent(_TaskEvent):
    """The attempt exited 0."""

    kind: Literal["completed"] = "completed"
    started_at: float
    finished_at: float
    output: OutputRef | None = None
    log_blob: str | None = None


FailureReason = Literal["exit", "timeout", "cancelled", "error", "not_started"]
"""Why an attempt failed: non-zero exit, killed at timeout_s, killed because the workflow was
cancelled, the worker could not run it (bad cwd, invalid output...), or never started in time."""


class TaskFailedEvent(_TaskEvent):
    """The attempt did not succeed."""

    kind: Literal["failed"] = "failed"
    started_at: float | None = None
    finished_at: float
    reason: FailureReason = "exit"
    exit_code: int | None = None
    error: str = Field(default="", max_length=ERROR_TAIL_CHARS)
    log_blob: str | None = None


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


def encode(message: _Message) -> str:
    """Compact JSON text of a message, checked against the budget."""
    text = message.model_dump_json(exclude_defaults=False, exclude_none=True)
    size = len(text.encode())
    if size > MESSAGE_BUDGET_BYTES:
        raise MessageError(
            f"{type(message).__name__} is {size} bytes, over the {MESSAGE_BUDGET_BYTES}-byte budget"
        )
    return text


def _text(raw: str | bytes) -> str:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MessageError(f"message is not UTF-8 text: {exc}") from None
    return raw


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<message>"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def decode_event(raw: str | bytes) -> Event:
    """Parse an event from the event queue; raise MessageError (with the reason) if malformed."""
    try:
        return _EVENT_ADAPTER.validate_json(_text(raw))
    except ValidationError as exc:
        raise MessageError(f"malformed event: {_explain(exc)}") from None


def decode_task_message(raw: str | bytes) -> TaskMessage:
    """Parse a task message; raise MessageError (with the reason) if malformed."""
    try:
        return TaskMessage.model_validate_json(_text(raw))
    except ValidationError as exc:
        raise MessageError(f"malformed task message: {_explain(exc)}") from None
