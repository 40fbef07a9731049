"""Answers about what a task is doing and did: its attempts, and the live state of its log."""

from __future__ import annotations

from shared.states import TaskState
from shared.views.base import Epoch, View
from shared.views.workflows import LogLocation


class AttemptView(View):
    """One attempt of a task, with the task view's field names."""

    attempt: int
    current: bool
    """The task's current attempt (the one the task view shows)."""
    kept: bool
    """False for an attempt older than the state keeps (see docs/api.md): only its number and
    its log location are known."""
    state: TaskState | None
    """The current attempt: the task's state; an earlier one: the task's state when it ended
    (``failed`` for an attempt that was retried)."""
    queue: str
    queued_at: Epoch | None
    started_at: Epoch | None
    finished_at: Epoch | None
    exit_code: int | None
    error: str | None
    worker: str | None
    log: LogLocation | None
    """Where its log is (absent for an attempt that has not started or left none)."""
    log_url: str | None
    """The API path that reads its log (``.../log?attempt=N``)."""


class AttemptList(View):
    """``GET /workflows/{id}/tasks/{task}/attempts``: every attempt of a task, oldest first."""

    workflow_id: str
    task: str
    items: list[AttemptView]
    """Oldest first; at most the latest ``MAX_LISTED_ATTEMPTS`` (100)."""


class GpuView(View):
    """One GPU of a worker machine at its latest heartbeat (from ``nvidia-smi``)."""

    index: int
    utilization: float
    """Percent of the sample period the GPU was busy (0-100)."""
    memory_used_mib: float
    memory_total_mib: float
