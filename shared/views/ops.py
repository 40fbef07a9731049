"""Operations answers: the worker registry, doctor and purge (docs/operations.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.views.attempts import GpuView
from shared.views.base import Epoch, View
from shared.views.cost import PoolMachines


class WorkerTaskView(View):
    """An attempt a worker runs."""

    workflow_id: str
    task: str
    attempt: int
    progress: float | None = None
    """What the task last reported (0-1), if anything."""
    metrics: dict[str, float] | None = None
    """Its latest metrics, if any."""


class WorkerView(View):
    """One worker agent, from its latest registry heartbeat."""

    worker_id: str
    host: str
    queues: list[str]
    """Queues it polls, highest priority first."""
    slots: int
    busy_slots: int
    tasks: list[WorkerTaskView] = Field(default_factory=list)
    version: str
    started_at: Epoch
    last_seen: Epoch
    """The worker's own clock at its latest heartbeat (epoch seconds)."""
    status: Literal["alive", "lost"]
    gpus: list[GpuView] = Field(default_factory=list)
    """Its GPUs' use at the latest heartbeat (left out where ``nvidia-smi`` is absent)."""
    busy_s: float = 0.0
    """Busy slot-seconds since it started: ``busy_s / (slots * (last_seen - started_at))`` is its
    utilisation."""
    live_errors: int = 0
    """Failed reads of its running tasks' progress files since it started (a task wrote something
    the worker could not read; the attempts went on)."""


class WorkersView(View):
    """``GET /api/workers``."""

    workers: list[WorkerView]
    lost_after_s: float
    """A worker not seen for this long is ``lost``."""
    pool: list[PoolMachines] = Field(default_factory=list)
    """The worker machines up in the last ``pool_window_s``, by VM size, most VM-hours first:
    what the pool paid for, boot and idle tail included (docs/cost.md)."""
    pool_window_s: float = 0.0
    currency: str = "USD"
    """The currency of the pool's ``estimated_cost``."""


class PurgedView(View):
    """``DELETE /api/workflows/{id}``: what was purged."""

    id: str
    status: str
    """The workflow's final status (``purging`` when an interrupted purge was finished)."""
    purged: bool = True
    blobs_deleted: int
    """Output, log, upstream and claim blobs deleted."""


class PurgedItem(View):
    """One workflow a bulk purge deleted (or, in a dry run, would delete)."""

    id: str
    name: str
    status: str
    finished_at: float | None


class PurgeReport(View):
    """``POST /api/purge``: one step of a bulk purge."""

    dry_run: bool
    older_than_s: float
    statuses: list[str]
    workflows: list[PurgedItem]
    """Purged in this step (in a dry run: those that would be)."""
    resumed: list[str]
    """Ids of interrupted purges found (and finished, unless this is a dry run)."""
    next: str | None
    """Pass back as ``next`` to go on; None when the scan is done."""
    cache_entries_expired: int = 0
    """Result cache entries past their ttl deleted by the first step (in a dry run: found)."""
    cache_problem: str | None = None
    """Why the first step could not remove expired cache entries (they wait for a later purge;
    the workflows were purged all the same), or None."""


class DoctorFinding(View):
    """One problem ``dagq doctor`` found, with how to fix it."""

    check: str
    """Which check found it (``unserved_queue``, ``lost_dispatch``, ...; docs/operations.md)."""
    severity: Literal["error", "warning", "info"]
    """``error`` and ``warning`` make the report unhealthy; ``info`` does not."""
    subject: str | None = None
    """The queue, workflow, worker or partition it is about."""
    title: str
    detail: str
    fix: str


class DoctorSummary(View):
    """What the doctor looked at."""

    workers_alive: int
    workers_lost: int
    active_workflows: int
    """Active workflows in the deployment's index (with or without an id: the same count)."""
    examined_workflows: int
    """Workflows whose state this run read (the asked one included)."""
    queued_tasks: int
    """Queued tasks of the examined workflows."""
    queue_depths: dict[str, int]
    """Definition queue name -> messages on it (visible or not)."""
    partitions: int
    workflow_status: str | None = None
    """With an id: that workflow's status."""


class DoctorReport(View):
    """``GET /api/doctor[?id=]``."""

    healthy: bool
    checked_at: float
    workflow_id: str | None
    findings: list[DoctorFinding]
    summary: DoctorSummary
