"""``dagq workers --utilization``: pool utilisation per queue from the worker registry.

A worker's record carries its busy slot-seconds since it started (``busy_s``); its alive
slot-seconds are ``slots x (last_seen - started_at)``. Per queue (each worker counts for every
queue it polls), utilisation = busy slot-seconds / alive slot-seconds over the window the registry
remembers: from each worker's start to its latest heartbeat (lost workers are kept for
DAGQ_WORKER_FORGET_AFTER_S, a week, then forgotten).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from shared.cli.fit_table import Column, FitTable
from shared.cli.style import duration
from shared.views import WorkersView


@dataclass
class QueueUse:
    """One queue's pool over the registry's window."""

    queue: str
    workers: int = 0
    slots: int = 0
    busy_slot_s: float = 0.0
    alive_slot_s: float = 0.0

    @property
    def utilization(self) -> float | None:
        """Busy / alive slot-seconds (None before any slot was alive)."""
        return self.busy_slot_s / self.alive_slot_s if self.alive_slot_s > 0 else None


def queue_use(view: WorkersView) -> list[QueueUse]:
    """Per queue, the slots of the workers polling it and their busy and alive slot-seconds."""
    uses: dict[str, QueueUse] = defaultdict(lambda: QueueUse(""))
    for worker in view.workers:
        alive = worker.slots * max(0.0, worker.last_seen - worker.started_at)
        for queue in worker.queues:
            use = uses[queue]
            use.queue = queue
            use.workers += 1
            use.slots += worker.slots
            use.busy_slot_s += min(worker.busy_s, alive)
            use.alive_slot_s += alive
    return sorted(uses.values(), key=lambda u: u.queue)


UTILIZATION_COLUMNS = (
    Column("queue", "name", floor=12),
    *(Column(c, right=True) for c in ("workers", "slots", "busy", "slot-time", "utilization")),
)


def utilization_table(view: WorkersView) -> FitTable:
    """The table of ``dagq workers --utilization``."""
    table = FitTable(UTILIZATION_COLUMNS)
    for use in queue_use(view):
        share = use.utilization
        table.add_row(
            use.queue, str(use.workers), str(use.slots), duration(use.busy_slot_s),
            duration(use.alive_slot_s), "-" if share is None else f"{share:.0%}",
        )  # fmt: skip
    return table
