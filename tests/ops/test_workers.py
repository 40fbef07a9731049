"""The worker registry's view: alive or lost by the service's clock, old lost records forgotten."""

from __future__ import annotations

from shared.ops.workers import list_workers, worker_status
from shared.storage.memory import memory_storage
from shared.storage.registry import WorkerRecord, WorkerTask
from shared.views import dump


def record(worker_id: str, last_seen: float, server_seen: float | None = None) -> WorkerRecord:
    return WorkerRecord(
        worker_id=worker_id,
        host="h",
        queues=["cpu"],
        slots=2,
        busy_slots=1,
        tasks=[WorkerTask("wf", "t", 1)],
        version="0.1.0",
        started_at=0.0,
        last_seen=last_seen,
        interval_s=20.0,
        server_seen=server_seen,
    )


def test_lost_after_the_threshold_by_the_service_clock() -> None:
    assert worker_status(record("a", 100.0, 100.0), now=190.0, lost_after_s=90) == "alive"
    assert worker_status(record("a", 100.0, 100.0), now=190.5, lost_after_s=90) == "lost"
    # A worker whose clock runs an hour fast is judged by when storage saw it, not by its clock.
    assert worker_status(record("a", 3700.0, 100.0), now=300.0, lost_after_s=90) == "lost"
    assert worker_status(record("a", -3500.0, 250.0), now=300.0, lost_after_s=90) == "alive"
    # Without the service's time, the worker's own is all there is.
    assert worker_status(record("a", 250.0), now=300.0, lost_after_s=90) == "alive"


async def test_listing_puts_alive_first_and_forgets_long_lost_records() -> None:
    now = [1000.0]
    storage = memory_storage(clock=lambda: now[0])
    await storage.registry.beat(record("old", 0.0))  # service time 1000
    now[0] = 5000.0
    await storage.registry.beat(record("b-lost", 0.0))
    now[0] = 9000.0
    await storage.registry.beat(record("a-alive", 0.0))
    view = await list_workers(storage, now=9010.0, lost_after_s=90, forget_after_s=7000)
    assert [(w.worker_id, w.status) for w in view.workers] == [
        ("a-alive", "alive"),
        ("b-lost", "lost"),
    ]
    assert view.lost_after_s == 90
    assert sorted(storage.registry.records) == ["a-alive", "b-lost"]  # "old" was deleted
    body = dump(view)
    assert body["workers"][0]["tasks"] == [{"workflow_id": "wf", "task": "t", "attempt": 1}]
    assert set(body["workers"][0]) == {
        "worker_id", "host", "queues", "slots", "busy_slots", "busy_s", "live_errors", "tasks",
        "version",
        "started_at", "last_seen", "status",
    }  # fmt: skip
