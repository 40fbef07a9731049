"""What a worker reads of a task's workflow before and while it runs the task: one HEAD of the
state blob, whose metadata holds the status and the incarnation (``shared.codec.metadata``).

A state blob that does not exist is not always a workflow gone: the submit sends a new workflow's
root task messages BEFORE it creates the state (issue 32, ``shared.api.root_dispatch``), so a
worker may take one first. A message sent less than ``ORPHAN_AFTER_S`` ago is handed back for a
few seconds (``state_wait_s``), its claim kept; an older one is an orphan (its submit failed
after sending it, or the workflow was purged): dead-lettered with ``orphan_reason``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.codec.metadata import (
    incarnation_from_metadata,
    run_from_metadata,
    status_from_metadata,
)
from shared.errors import NotFoundError
from shared.messages import TaskMessage
from shared.states import WorkflowStatus
from shared.storage.ports import ReceivedMessage, Storage

ORPHAN_AFTER_S = 30.0
"""A task message whose workflow's state blob does not exist is waited for until this long after
it was sent (the submit creates the state right after sending the roots: milliseconds, seconds
under retries); later, it is an orphan."""
MAX_STATE_WAIT_S = 8
"""The longest a message waiting for its state is handed back for (1, 2, 4, 8, 8... s)."""

CANCELLED_STATUSES = frozenset({WorkflowStatus.CANCELLING, WorkflowStatus.CANCELLED})
FINISHED_STATUSES = frozenset({WorkflowStatus.COMPLETED, WorkflowStatus.FAILED})
"""A redelivered message of a run that ended in one of these is late: ``WorkflowSeen.late``."""


@dataclass(frozen=True, slots=True)
class WorkflowSeen:
    """What one HEAD of a task's state blob says about the task message's workflow."""

    status: WorkflowStatus | None
    """CANCELLED if the state blob is gone (deleted: nothing to run for)."""
    run: int | None
    foreign: str
    """Why the message is of another incarnation of the workflow's id ("" if it is not)."""
    missing: bool = False
    """The state blob does not exist (not yet created, or deleted): see ``state_wait_s``."""

    def late(self, message: TaskMessage, dequeue_count: int) -> bool:
        """Whether ``message`` is late, to be dropped and never run after its run ended:

        - a message of an earlier run than the state's, however delivered: a rerun started
          since, so its run failed or was cancelled (a rerun never sends an attempt number an
          earlier run may have sent: ``engine.attempt_bounds``);
        - a message of the state's own run once that run completed or failed, however
          delivered: a redelivery (its worker reported and died before deleting it, or stalled
          past its visibility), or the first delivery of a dispatch the state never recorded (a
          pass sent it and lost its write; the pass that applied the events again completed the
          task another way, from the result cache: simulation seed 3605178). A run that ended
          stays ended: what runs again is a rerun, a new run.

        A message of a run ahead of the state's is never late: a rerun is dispatched before the
        coordinator records it, so the state may say "failed" for a while after. Dropping such a
        message would keep its claim and wedge the rerun (the simulation found both: seeds 1029
        and 1906). A message or state without a run (from before runs were carried) is judged by
        its delivery alone: a first delivery may be a rerun's."""
        if message.run is not None and self.run is not None:
            if message.run != self.run:
                return message.run < self.run
            return self.status in FINISHED_STATUSES
        return dequeue_count > 1 and self.status in FINISHED_STATUSES


def seen_in(message: TaskMessage, metadata: Mapping[str, str] | None) -> WorkflowSeen:
    """What a state blob's metadata (None: no state blob) says about ``message``'s workflow."""
    if metadata is None:
        return WorkflowSeen(WorkflowStatus.CANCELLED, None, "", missing=True)
    return WorkflowSeen(
        status_from_metadata(metadata),
        run_from_metadata(metadata),
        other_incarnation(message, metadata),
    )


def cancelled_by(message: TaskMessage, metadata: Mapping[str, str] | None) -> bool:
    """Whether the task's workflow is cancelling/cancelled, or gone (no state blob: deleted; or
    purged and submitted again: another incarnation), by its state blob's metadata."""
    if metadata is None or other_incarnation(message, metadata):
        return True
    return status_from_metadata(metadata) in CANCELLED_STATUSES


async def state_metadata_or_none(storage: Storage, workflow_id: str) -> Mapping[str, str] | None:
    """The state blob's metadata (one HEAD); None if there is no state blob."""
    try:
        return await storage.workflows.state_metadata(workflow_id)
    except NotFoundError:
        return None


async def workflow_of(storage: Storage, message: TaskMessage) -> WorkflowSeen:
    """What the state blob's metadata says about ``message``'s workflow (one HEAD of its own;
    the worker shares its HEADs: ``worker_agent.state_heads``)."""
    return seen_in(message, await state_metadata_or_none(storage, message.workflow_id))


async def workflow_cancelled(storage: Storage, message: TaskMessage) -> bool:
    """``cancelled_by`` with one HEAD of its own."""
    return cancelled_by(message, await state_metadata_or_none(storage, message.workflow_id))


def other_incarnation(message: TaskMessage, metadata: Mapping[str, str]) -> str:
    """Why ``message`` belongs to another workflow of its id than the state blob's ("" if not):
    the incarnations must be equal (both None: a workflow and a message from before them)."""
    current = incarnation_from_metadata(metadata)
    if message.incarnation == current:
        return ""
    return (
        f"task message of another incarnation of workflow {message.workflow_id!r} (incarnation"
        f" {message.incarnation}, the workflow's is {current}): it was purged and submitted"
        " again since the message was sent, so the attempt is not run"
    )


def state_wait_s(received: ReceivedMessage, now: float) -> int:
    """How long to hand back a task message whose workflow's state blob does not exist, its
    claim kept: the submit may not have created the state yet (it sends the roots first). 0: the
    message is an orphan, sent ``ORPHAN_AFTER_S`` or more before ``now`` (or its send time is
    unknown). Waiting on the message's age, not on its delivery count: a submit slowed by retries
    past the first hand-back still finds its roots there."""
    inserted = received.inserted_at
    if inserted is None or now - inserted >= ORPHAN_AFTER_S:
        return 0
    return int(min(2 ** max(received.dequeue_count - 1, 0), MAX_STATE_WAIT_S))


def orphan_reason(message: TaskMessage) -> str:
    """Why a task message whose workflow's state blob does not exist is dead-lettered."""
    return (
        f"task message of workflow {message.workflow_id!r} (incarnation {message.incarnation}),"
        f" which has no state blob {ORPHAN_AFTER_S:.0f} s after the message was sent: its submit"
        " failed after sending it, or the workflow was purged; the attempt is not run"
    )


async def orphaned(storage: Storage, seen: WorkflowSeen, message: TaskMessage) -> str:
    """Why ``message`` is an orphan to dead-letter ("" if its state blob exists): call it once
    ``state_wait_s`` said 0. Deletes the attempt's claim first, which this message took: were
    the state created after all (a submit stalled past ``ORPHAN_AFTER_S``), the empty-queue
    repair's re-send of the attempt must find the claim free, not held by a dropped message. (A
    message without an incarnation has a claim in the legacy flat layout: left alone.)"""
    if not seen.missing:
        return ""
    if message.incarnation is not None:
        await storage.outputs.delete_prefix(message.claim_blob())
    return orphan_reason(message)
