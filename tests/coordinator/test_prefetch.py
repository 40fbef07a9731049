"""Receives run ahead of the drain's cycles (passes.py, issue 32): what came back while a cycle was
updated joins the next cycle, and every receive a pass started is updated and acknowledged in that
pass, also when the deadline passes with receives ahead (none is left to come back after its
visibility timeout, the wait that would add to a hop).

Storage latency is played by sleeps before the calls (a receive and a state write take a while,
as on Azure); what is asserted does not depend on how long they take.
"""

from __future__ import annotations

import asyncio
from typing import Any

from shared.coordinator import Coordinator
from shared.messages import TaskCompletedEvent, encode
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from tests.coordinator.faults import FaultPlan, faulty
from tests.coordinator.helpers import FakeClock, fan, fast_options, load, submit

NAMES = ResourceNames("mem")
LEAVES = 300


class Latency(FaultPlan):
    """Every call named in ``delays`` waits that long first."""

    def __init__(self, delays: dict[str, float]) -> None:
        super().__init__()
        self.delays = delays

    async def call(self, name: str, fn: Any, *a: Any, **kw: Any) -> Any:
        await asyncio.sleep(self.delays.get(name, 0.0))
        return await fn(*a, **kw)


async def leaves_completed(storage: MemoryStorage, clock: FakeClock, wid: str) -> None:
    """A fan of LEAVES leaves whose leaves are all running, and all their completions queued."""
    wf = fan(LEAVES)
    await submit(storage, wf, wid, clock())
    coord = Coordinator(storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()  # activate: the root is dispatched
    now = clock()
    done = TaskCompletedEvent(workflow_id=wid, task="root", attempt=1, started_at=now,
                              finished_at=now)  # fmt: skip
    await storage.event_queue.send(encode(done))
    await coord.run_once()  # the leaves are dispatched
    for i in range(LEAVES):
        leaf = done.model_copy(update={"task": f"leaf{i:05d}"})
        await storage.event_queue.send(encode(leaf))


async def unreceived(storage: MemoryStorage) -> int:
    """Events still on the queue and visible (the fake clock has not moved: a received one is
    invisible until it is deleted or its visibility runs out)."""
    count = 0
    while batch := await storage.event_queue.receive(32, 60):
        count += len(batch)
    return count


async def test_a_slow_cycle_takes_in_every_receive_that_came_back_meanwhile(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await leaves_completed(memory_storage, clock, "wf-pre")
    slow = faulty(memory_storage, Latency({"events.receive": 0.02, "workflows.write_state": 0.1}))
    coord = Coordinator(slow, NAMES, fast_options(), clock=clock)
    stats = (await coord.run_once()).stats
    assert stats.events_applied == LEAVES
    assert stats.duplicates == 0
    assert await unreceived(memory_storage) == 0
    assert (
        memory_storage.event_queue.peek_texts() == []
    )  # every event deleted before the pass ended
    state = await load(memory_storage, fan(LEAVES), "wf-pre")
    assert state.task(LEAVES + 1).attempt == 1  # the sink was dispatched
    # One receive, then cycles of 2 receives of 32 each without receiving ahead: at least
    # 1 + ceil(268 / 64) = 6 flushes; the receives that came back during a write join the next.
    assert stats.flushes <= 4, stats.record()


async def test_receives_ahead_at_the_deadline_are_updated_in_the_pass(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await leaves_completed(memory_storage, clock, "wf-dl")
    slow = faulty(memory_storage, Latency({"events.receive": 0.02, "workflows.write_state": 0.1}))
    coord = Coordinator(slow, NAMES, fast_options(), clock=clock)
    # The deadline passes during the second cycle, with receives ahead of it.
    stats = (await coord.run_once(budget_s=0.15)).stats
    assert 0 < stats.events_applied < LEAVES
    # Every event the pass received was applied and deleted; the rest were never received.
    assert stats.events_applied == stats.events_received
    assert stats.events_applied + await unreceived(memory_storage) == LEAVES
    assert len(memory_storage.event_queue.peek_texts()) == LEAVES - stats.events_applied


class Order(FaultPlan):
    """Notes when each call starts and ends; receives take a while."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def call(self, name: str, fn: Any, *a: Any, **kw: Any) -> Any:
        self.seen.append(f"start {name}")
        if name == "events.receive":
            await asyncio.sleep(0.1)
        try:
            return await fn(*a, **kw)
        finally:
            self.seen.append(f"end {name}")


async def test_a_trigger_event_is_dispatched_without_waiting_for_a_receive(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await submit(memory_storage, fan(2), "wf-trig", clock())
    (activate,) = await memory_storage.event_queue.receive(1, 60)  # the host's: handed over below
    await memory_storage.event_queue.delete(activate)
    plan = Order()
    coord = Coordinator(faulty(memory_storage, plan), NAMES, fast_options(), clock=clock)
    result = await coord.handle_trigger_message(activate.text, activate.id)
    assert result.trigger_applied
    assert not result.trigger_requeued
    assert plan.seen.index("start queue.send") < plan.seen.index("end events.receive")
    # ... and the receive in flight is still waited for and updated within the pass.
    assert plan.seen.index("end events.receive") < len(plan.seen) - 1
    state = await load(memory_storage, fan(2), "wf-trig")
    assert state.task(0).attempt == 1
