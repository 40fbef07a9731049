"""Task and workflow states, with what each one means."""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    """Where one task of a workflow is in its life."""

    PENDING = "pending"
    """Waiting for its dependencies."""
    READY = "ready"
    """Dependencies met; waiting for a max_parallelism slot (or the next dispatch)."""
    QUEUED = "queued"
    """A task message for the current attempt was sent; no worker has reported a start yet."""
    RUNNING = "running"
    """A worker reported that it started the current attempt."""
    COMPLETED = "completed"
    """An attempt exited 0. Terminal."""
    FAILED = "failed"
    """The last allowed attempt failed (or timed out). Terminal."""
    SKIPPED = "skipped"
    """Its condition was false or could not be evaluated. Terminal; satisfies its children."""
    UPSTREAM_FAILED = "upstream_failed"
    """Its dependency policy can no longer be met because parents failed. Terminal."""
    CANCELLED = "cancelled"
    """The workflow was cancelled before the task finished. Terminal."""

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_TASK_STATES


TERMINAL_TASK_STATES = frozenset(
    {
        TaskState.COMPLETED,
        TaskState.FAILED,
        TaskState.SKIPPED,
        TaskState.UPSTREAM_FAILED,
        TaskState.CANCELLED,
    }
)
IN_FLIGHT_TASK_STATES = frozenset({TaskState.QUEUED, TaskState.RUNNING})
"""The states max_parallelism counts."""


class WorkflowStatus(StrEnum):
    """Where a workflow is in its life."""

    PENDING = "pending"
    """Submitted; the coordinator has not activated it yet."""
    RUNNING = "running"
    """Activated; tasks are being dispatched and run."""
    CANCELLING = "cancelling"
    """Cancel requested and applied; waiting for running tasks to stop."""
    COMPLETED = "completed"
    """Every task is terminal and the result policy says success. Terminal."""
    FAILED = "failed"
    """Every task is terminal and the result policy says failure. Terminal."""
    CANCELLED = "cancelled"
    """Cancelled, and every task is terminal. Terminal."""

    @property
    def is_terminal(self) -> bool:
        return self in (WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED)
