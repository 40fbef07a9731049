"""Hand-made doctor facts: the limits and a worker's record, shared by the doctor checks' tests
and the tests that gather facts."""

from __future__ import annotations

from typing import Any

from shared.ops.doctor_facts import Limits
from shared.storage.registry import WorkerRecord

NOW = 1_800_000_000.0


LIMITS = Limits(
    worker_lost_after_s=90,
    empty_queue_repair_after_s=60,
    lost_dispatch_after_s=86400,
    activate_repair_after_s=30,
    sweep_overdue_after_s=300,
    event_stuck_after_s=60,
    clock_skew_s=30,
    dead_letter_window_s=86400,
)


def worker(worker_id: str = "w1", queues: tuple[str, ...] = ("cpu",), **kw: Any) -> WorkerRecord:
    base: dict[str, Any] = {
        "worker_id": worker_id, "host": "vm1", "queues": list(queues), "slots": 1,
        "busy_slots": 0, "tasks": [], "version": "0.1.0", "started_at": NOW - 600,
        "last_seen": NOW - 5, "interval_s": 20.0, "server_seen": NOW - 5,
    }  # fmt: skip
    return WorkerRecord(**{**base, **kw})
