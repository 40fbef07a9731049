"""The task message (coordinator -> worker, on a task queue) and a task's output reference."""

from __future__ import annotations

import hashlib
import json
from typing import Literal, TypedDict

from pydantic import Field, ValidationError, model_validator

from shared.errors import MessageError
from shared.json_values import FiniteJson
from shared.limits import MAX_OUTPUT_SIZE, MAX_PARTITIONS
from shared.messages.base import SignedMessage, _Message
from shared.messages.fields import (
    Attempt,
    Incarnation,
    QueueName,
    TaskName,
    UpstreamDigest,
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


def decode_task_message(raw: str | bytes) -> TaskMessage:
    """Parse a task message; raise MessageError (with the reason) if malformed."""
    try:
        return TaskMessage.model_validate_json(message_text(raw))
    except ValidationError as exc:
        raise MessageError(f"malformed task message: {explain(exc)}") from None
