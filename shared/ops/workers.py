"""``GET /api/workers``: the worker registry as its readers see it, alive or lost.

A worker is *lost* when its record has not been refreshed for ``lost_after_s`` (a few of its
heartbeat intervals): it crashed, its VM was evicted, or it cannot reach storage. A lost record
that stays unrefreshed for ``forget_after_s`` is deleted when the registry is next read, so the
list does not grow with every worker that ever ran.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from shared.views import GpuView, WorkersView, WorkerTaskView, WorkerView

log = logging.getLogger("dagq.ops")

if TYPE_CHECKING:
    from shared.storage.ports import Storage
    from shared.storage.registry import GpuUse, WorkerRecord, WorkerTask

WorkerStatus = Literal["alive", "lost"]


def seen_at(record: WorkerRecord) -> float:
    """When the record was last written: the storage service's time when known (a worker with
    a wrong clock must not look alive, or lost, because of it), else the worker's own."""
    return record.server_seen if record.server_seen is not None else record.last_seen


def worker_status(record: WorkerRecord, now: float, lost_after_s: float) -> WorkerStatus:
    """``alive`` if the record was refreshed within ``lost_after_s`` of ``now``, else ``lost``."""
    return "alive" if now - seen_at(record) <= lost_after_s else "lost"


def worker_view(record: WorkerRecord, now: float, lost_after_s: float) -> WorkerView:
    """One worker as ``GET /api/workers`` shows it."""
    return WorkerView(
        worker_id=record.worker_id,
        host=record.host,
        queues=record.queues,
        slots=record.slots,
        busy_slots=record.busy_slots,
        tasks=[_task_view(t) for t in record.tasks],
        version=record.version,
        started_at=record.started_at,
        last_seen=record.last_seen,
        status=worker_status(record, now, lost_after_s),
        busy_s=record.busy_s,
        live_errors=record.live_errors,
        **({"gpus": [_gpu_view(g) for g in record.gpus]} if record.gpus else {}),
    )


def _task_view(task: WorkerTask) -> WorkerTaskView:
    progress = task.progress
    extra: dict[str, Any] = {}
    if progress is not None and progress.progress is not None:
        extra["progress"] = progress.progress
    if progress is not None and progress.metrics:
        extra["metrics"] = dict(progress.metrics)
    return WorkerTaskView(
        workflow_id=task.workflow_id, task=task.task, attempt=task.attempt, **extra
    )


def _gpu_view(gpu: GpuUse) -> GpuView:
    return GpuView(
        index=gpu.index,
        utilization=gpu.utilization,
        memory_used_mib=gpu.memory_used_mib,
        memory_total_mib=gpu.memory_total_mib,
    )


async def list_workers(
    storage: Storage, *, now: float, lost_after_s: float, forget_after_s: float
) -> WorkersView:
    """Every registered worker, alive ones first; deletes records older than ``forget_after_s``."""
    records = await storage.registry.workers()
    kept = []
    for record in records:
        if now - seen_at(record) > forget_after_s:
            try:  # by the row's own key: a forged row's need not match its worker id
                await storage.registry.remove(record.worker_id, row_key=record.row_key)
            except Exception as exc:  # one row's trouble never costs the listing
                log.warning("could not forget worker %.80r: %r", record.worker_id, exc)
        else:
            kept.append(worker_view(record, now, lost_after_s))
    kept.sort(key=lambda w: (w.status != "alive", w.worker_id))
    return WorkersView(workers=kept, lost_after_s=lost_after_s)
