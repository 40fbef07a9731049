"""Answers about cost: one workflow's (``GET /workflows/{id}/cost``) and a period's
(``GET /cost``), computed by ``shared.cost.model``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.views.base import Epoch, View
from shared.views.workflows import CachedFromView


class TaskCost(View):
    """What one task's attempts cost (every attempt the state remembers, the current one too)."""

    name: str
    queue: str
    gpus: int
    """GPUs per attempt: the task's ``gpus``, else its queue's in the price table (0: CPU)."""
    attempts: int
    """Attempts that ran (a result reused from the cache is not one)."""
    run_s: float
    """Run time of those attempts, summed (a running attempt counts until now)."""
    wait_s: float
    """Time they waited in the queue for a worker, summed."""
    gpu_hours: float
    cpu_hours: float
    """Task-slot hours on queues without GPUs."""
    estimated_cost: float
    cached_from: CachedFromView | None = None
    cached_saved_hours: float = 0.0
    """GPU-hours (or slot-hours) the reused result did not spend again."""
    cached_saved_cost: float = 0.0


class WorkflowCost(View):
    """``GET /workflows/{id}/cost``: GPU-hours, CPU-hours and an estimate in money, per task."""

    id: str
    name: str
    currency: str
    gpu_hours: float
    cpu_hours: float
    queue_wait_hours: float
    """Time attempts waited for a worker, summed (not paid for, but what a bigger pool buys)."""
    compute_cost: float
    storage_requests: float
    """Estimated storage requests the run caused (docs/cost.md says how)."""
    storage_cost: float
    estimated_cost: float
    """``compute_cost + storage_cost``."""
    cached_saved_hours: float
    cached_saved_cost: float
    tasks: list[TaskCost] = Field(default_factory=list)
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """The run's workflow parameters (``params:``), to tell runs of one workflow apart."""


class CostGroup(View):
    """One group of a period's cost (a queue, or a workflow name)."""

    key: str
    workflows: int
    gpu_hours: float
    cpu_hours: float
    estimated_cost: float
    cached_saved_hours: float


class PoolMachines(View):
    """The worker machines of one VM size that were up in a period: what the pool paid for,
    boot and idle tail included, beside what the tasks used (``shared.storage.machines``)."""

    vm_size: str
    """Their VM size ("": not told, e.g. a laptop or a pod)."""
    machines: int
    """Machine boots counted."""
    vm_hours: float
    """Hours they were up within the period, from boot (or agent start) to their latest note."""
    gpu_hours: float
    """``vm_hours`` times their GPUs: the GPU-hours the pool paid for."""
    estimated_cost: float | None
    """``vm_hours`` at the size's hourly price (None: a size with no price)."""


class CostReport(View):
    """``GET /cost?since_s=&by=``: the cost of the workflows created in a period, grouped."""

    since: Epoch
    by: Literal["queue", "name"]
    currency: str
    workflows: int
    """Workflows counted (at most ``limit``, newest first)."""
    truncated: bool
    """More workflows were created in the period than were counted."""
    partial: str | None = None
    """Why the report stopped short of ``limit``: its task budget (the newest workflows were
    counted); None otherwise."""
    gpu_hours: float
    cpu_hours: float
    estimated_cost: float
    cached_saved_hours: float
    groups: list[CostGroup]
    pool: list[PoolMachines] = Field(default_factory=list)
    """The machines up in the period, by VM size, most VM-hours first."""
    pool_vm_hours: float = 0.0
    pool_gpu_hours: float = 0.0
    """GPU-hours the pool paid for; with ``gpu_hours`` (what tasks used), the pool's use."""
    pool_cost: float = 0.0
    """The priced sizes' ``estimated_cost``, summed."""
