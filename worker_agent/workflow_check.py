"""What a worker reads of a task's workflow before and while it runs the task: one HEAD of the
state blob, whose metadata holds the status and the incarnation (``shared.codec.metadata``)."""

from __future__ import annotations

from collections.abc import Mapping

from shared.codec.metadata import incarnation_from_metadata, status_from_metadata
from shared.errors import NotFoundError
from shared.messages import TaskMessage
from shared.states import WorkflowStatus
from shared.storage.ports import Storage

CANCELLED_STATUSES = frozenset({WorkflowStatus.CANCELLING, WorkflowStatus.CANCELLED})
FINISHED_STATUSES = frozenset({WorkflowStatus.COMPLETED, WorkflowStatus.FAILED})
"""A redelivered message of a workflow in one of these is late (its worker reported and died
before deleting it): it is dropped, never run after its workflow ended."""


async def workflow_of(storage: Storage, message: TaskMessage) -> tuple[WorkflowStatus | None, str]:
    """The workflow's status and why ``message`` is of another incarnation of its id ("" if
    not); the status is CANCELLED if the state blob is gone (deleted: nothing to run for)."""
    try:
        metadata = await storage.workflows.state_metadata(message.workflow_id)
    except NotFoundError:
        return WorkflowStatus.CANCELLED, ""
    return status_from_metadata(metadata), other_incarnation(message, metadata)


async def workflow_cancelled(storage: Storage, message: TaskMessage) -> bool:
    """Whether the task's workflow is cancelling/cancelled, or gone (its state blob deleted, or
    purged and submitted again: another incarnation)."""
    try:
        metadata = await storage.workflows.state_metadata(message.workflow_id)
    except NotFoundError:
        return True
    if other_incarnation(message, metadata):
        return True
    return status_from_metadata(metadata) in CANCELLED_STATUSES


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
