"""Every message shape that crosses a process boundary through a queue, in one place.

- ``TaskMessage``: coordinator -> worker, on a task queue (``{prefix}-q-{queue}``).
- ``Event``: worker or API -> coordinator, on the event queue (``{prefix}-events``).

Encoding, one convention for every queue: compact UTF-8 JSON sent as plain text (the Functions host
has ``"messageEncoding": "none"``). Every message dagq writes stays below ``MESSAGE_BUDGET_BYTES``
whatever the workflow: outputs and fan-in lists that would not fit travel as blob references.

Messages are untrusted input: every field is bounded where it is decoded (``shared.message_fields``:
ids and names by the rules of ``shared.names``, attempts and runs within the state's 32-bit
columns, finite timestamps in a sane range, lengths of free text), and a blob name an event carries
must be the conventional one for its workflow, task and attempt — so nothing a message says can
reach past the outputs container or overflow the state codec.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from shared.errors import MessageError
from shared.json_values import FiniteJson
from shared.limits import (
    ERROR_TAIL_CHARS,
    MAX_COUNTER,
    MAX_EVENT_REASON_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_OUTPUT_SIZE,
    MAX_PARTITIONS,
    MESSAGE_BUDGET_BYTES,
    SIGNATURE_CHARS,
)
from shared.message_fields import (
    Attempt,
    Incarnation,
    QueueName,
    TaskName,
    Timestamp,
    UpstreamDigest,
    WorkerName,
    WorkflowId,
    explain,
    message_text,
    parent_output_blob,
)
from shared.names import ResourceNames
from shared.settings import Settings

INLINE_OUTPUT_BYTES: int = Settings.model_fields["inline_output_bytes"].default
"""A task output (JSON) up to this size travels inline in its event and lives in the state blob;
larger outputs are uploaded to the outputs container and referenced (``DAGQ_INLINE_OUTPUT_BYTES``
is the coordinator's limit; the worker inlines up to its default)."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SignedMessage(_Message):
    """A message only the app may send: it carries the app's signature (``shared.signing``)."""

    sig: str | None = Field(default=None, max_length=SIGNATURE_CHARS)
    """The app's Ed25519 signature of the rest of the message (None: sent unsigned, by a
    deployment without ``DAGQ_SIGNING_KEY``, which its workers accept only without keys too)."""


class OutputRef(_Message):
    """A task attempt's JSON output: the value itself when small, else where it is stored."""

    inline: FiniteJson = None
    """The output value, when stored inline (``blob`` is then None); finite numbers only."""
    blob: str | None = None
    """Blob name in the outputs container, when the output is too large to inline."""
    size: int = Field(default=0, ge=0, le=MAX_OUTPUT_SIZE)
    """Size of the output's JSON encoding in bytes."""
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """Hex SHA-256 of a blob output's bytes (the cache key of a task reading it uses this, never
    the blob's per-run name); None for inline outputs and from older workers."""

    @model_validator(mode="after")
    def _one_place(self) -> OutputRef:
        if self.blob is not None and self.inline is not None:
            raise ValueError("an output is either inline or in a blob, not both")
        return self


def upstream_digest(upstream: dict[str, OutputRef] | None) -> str:
    """16 hex digits of the SHA-256 of the parents' outputs' canonical JSON: equal inputs."""
    refs = {k: v.model_dump(mode="json", exclude_none=True) for k, v in (upstream or {}).items()}
    text = json.dumps(refs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ReportFields(TypedDict):
    """What an event reporting an attempt copies from its task message."""

    workflow_id: str
    task: str
    attempt: int
    incarnation: int | None
    upstream_digest: str | None


class TaskMessage(SignedMessage):
    """One attempt of one task, sent to the task queue of its hardware class."""

    v: Literal[1] = 1
    workflow_id: WorkflowId
    task: TaskName
    attempt: Attempt
    queue: QueueName
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
    incarnation: Incarnation | None = None
    """The incarnation of the workflow id this attempt belongs to (its state's): a worker runs
    the message only while the state blob's metadata names the same one, and reports it back."""
    incarnation_blobs: Literal[True] | None = None
    """True: the attempt's blobs (claim, log, output, upstream bundle) are named under the
    incarnation (``{id}/{incarnation}/{task}/{attempt}/``), as for every workflow submitted since
    state version 6; absent: the flat ``{id}/{task}/{attempt}/`` of a workflow from before."""
    run: int | None = Field(default=None, ge=1)
    """The workflow run that dispatched this attempt (None: sent by a dagq from before runs were
    carried). A redelivery of a finished workflow's message is late, and dropped, only if its run
    is not ahead of the state's: a later run is a rerun the state does not show yet, and runs."""
    params: dict[str, str] | None = None
    """The workflow's parameters as text (None: it declares none): the worker sets each as
    ``DAGQ_PARAM_<NAME>`` in the task's environment."""
    upstream_digest: UpstreamDigest | None = None
    """``upstream_digest`` of the upstream, for a task with parents (None: a root, or an older
    coordinator); echoed in the reports: a re-send may have carried other inputs."""

    def report_fields(self) -> ReportFields:
        """The fields every event reporting this attempt copies from it."""
        return {
            "workflow_id": self.workflow_id,
            "task": self.task,
            "attempt": self.attempt,
            "incarnation": self.incarnation,
            "upstream_digest": self.upstream_digest,
        }

    @property
    def key(self) -> str:
        """``{workflow}/{task}/{attempt}``: unique forever (attempt numbers only grow)."""
        return f"{self.workflow_id}/{self.task}/{self.attempt}"

    @property
    def blob_incarnation(self) -> int | None:
        """The incarnation that names this attempt's blobs (``ResourceNames.attempt_prefix``);
        None: the flat layout."""
        return self.incarnation if self.incarnation_blobs else None

    def claim_blob(self) -> str:
        """This attempt's claim blob (per incarnation in either layout)."""
        return ResourceNames.claim_blob(
            self.workflow_id,
            self.task,
            self.attempt,
            self.incarnation,
            flat=not self.incarnation_blobs,
        )

    @model_validator(mode="after")
    def _conventional_blobs(self) -> TaskMessage:
        if self.incarnation_blobs and self.incarnation is None:
            raise ValueError("incarnation_blobs needs an incarnation")
        bundle = ResourceNames.upstream_blob(
            self.workflow_id, self.task, self.attempt, self.blob_incarnation
        )
        if self.upstream_blob is not None and self.upstream_blob != bundle:
            raise ValueError(
                f"upstream_blob {self.upstream_blob[:200]!r} is not this attempt's {bundle!r}"
            )
        for parent, ref in (self.upstream or {}).items():
            try:
                parent_output_blob(self.workflow_id, parent, ref.blob, self.incarnation)
            except MessageError as exc:
                raise ValueError(str(exc)) from None
        return self


# -- events ----------------------------------------------------------------------------------


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


def encode(message: _Message) -> str:
    """Compact JSON text of a message, checked against the budget."""
    text = message.model_dump_json(exclude_defaults=False, exclude_none=True)
    size = len(text.encode())
    if size > MESSAGE_BUDGET_BYTES:
        raise MessageError(
            f"{type(message).__name__} is {size} bytes, over the {MESSAGE_BUDGET_BYTES}-byte budget"
        )
    return text


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


class Redelivery(_Message):
    """An event the coordinator handed back to the event queue (a Functions trigger message it
    could not apply), with the deliveries it has had: a re-sent message starts again at dequeue
    count 1, so without this an event that keeps failing would never reach its bound."""

    kind: Literal["redelivery"] = "redelivery"
    deliveries: int = Field(ge=0, le=MAX_COUNTER)
    event: str
    """The original event message, as it was received."""


_REDELIVERY_START = '{"kind":"redelivery",'


def wrap_redelivery(text: str, deliveries: int) -> str:
    """The message that hands ``text`` back to the event queue, carrying ``deliveries``."""
    return Redelivery(deliveries=deliveries, event=unwrap_redelivery(text)[0]).model_dump_json()


def unwrap_redelivery(text: str) -> tuple[str, int]:
    """The original event text of a message and the deliveries it had before it was re-sent (0
    for an ordinary event; a redelivery that cannot be decoded is returned as it is, to be
    dead-lettered as malformed)."""
    if not text.startswith(_REDELIVERY_START) or len(text) > 2 * MAX_MESSAGE_BYTES:
        return text, 0
    try:
        wrapper = Redelivery.model_validate_json(text)
    except ValidationError:
        return text, 0
    return wrapper.event, wrapper.deliveries


def decode_task_message(raw: str | bytes) -> TaskMessage:
    """Parse a task message; raise MessageError (with the reason) if malformed."""
    try:
        return TaskMessage.model_validate_json(message_text(raw))
    except ValidationError as exc:
        raise MessageError(f"malformed task message: {explain(exc)}") from None
