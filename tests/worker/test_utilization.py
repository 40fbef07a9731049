"""Pool utilisation (``dagq workers --utilization``): a worker's record counts its busy
slot-seconds since it started, and the CLI divides them by its alive slot-seconds, per queue."""

from __future__ import annotations

from shared.cli.utilization import queue_use
from shared.storage.memory import memory_storage
from shared.storage.ports import ReceivedMessage
from shared.views import WorkersView, WorkerView
from worker_agent.registry import Presence


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_busy_slot_seconds_add_up_finished_and_running_tasks() -> None:
    clock = Clock()
    presence = Presence(
        memory_storage().registry, worker_id="w1", queues=["gpu"], slots=2, interval_s=20.0,
        clock=clock,
    )  # fmt: skip
    message = ReceivedMessage("m", "r", "not a task message", 1)
    presence.took(0, message)
    clock.now += 30
    presence.freed(0)  # 30 s on slot 0
    presence.took(1, message)
    clock.now += 10  # slot 1 busy for 10 s so far
    record = presence.record()
    assert record.busy_s == 40.0
    assert record.last_seen - record.started_at == 40.0  # 2 slots x 40 s alive: 50% busy


def worker(worker_id: str, queues: list[str], slots: int, up_s: float, busy_s: float) -> WorkerView:
    return WorkerView(
        worker_id=worker_id, host="h", queues=queues, slots=slots, busy_slots=0, version="1",
        started_at=0.0, last_seen=up_s, status="alive", busy_s=busy_s,
    )  # fmt: skip


def test_utilization_per_queue_is_busy_over_alive_slot_seconds() -> None:
    view = WorkersView(
        workers=[
            worker("a", ["gpu"], 2, 100.0, 150.0),  # 150 of 200 slot-seconds
            worker("b", ["gpu", "cpu"], 1, 100.0, 10.0),  # 10 of 100, on both queues
        ],
        lost_after_s=60.0,
    )
    by_queue = {use.queue: use for use in queue_use(view)}
    assert by_queue["gpu"].utilization == (150 + 10) / 300
    assert by_queue["cpu"].utilization == 0.1
    assert (by_queue["gpu"].workers, by_queue["gpu"].slots) == (2, 3)
