"""A workflow the coordinator has not cached is loaded in one round trip (issue 32): its
definition and state blobs are read together, and what a missing or foreign one means is unchanged
(an orphan, a dead letter for another partition's workflow)."""

from __future__ import annotations

import asyncio
from typing import Any

from shared.coordinator import Coordinator
from shared.messages import ActivateEvent, encode
from shared.names import ResourceNames
from shared.states import TaskState
from shared.storage.memory import MemoryStorage
from tests.coordinator.faults import FaultPlan, faulty
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
READS = {"workflows.read_definition", "workflows.read_state"}


class InFlight(FaultPlan):
    """Notes which reads were in flight together (each read yields to the loop first)."""

    def __init__(self) -> None:
        super().__init__()
        self.now: set[str] = set()
        self.together: list[set[str]] = []

    async def call(self, name: str, fn: Any, *a: Any, **kw: Any) -> Any:
        if name not in READS:
            return await fn(*a, **kw)
        self.now.add(name)
        await asyncio.sleep(0.01)
        self.together.append(set(self.now))
        try:
            return await fn(*a, **kw)
        finally:
            self.now.discard(name)


async def test_definition_and_state_are_read_together(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await submit(memory_storage, diamond(), "wf-cold", clock())
    plan = InFlight()
    coord = Coordinator(faulty(memory_storage, plan), NAMES, fast_options(), clock=clock)
    stats = (await coord.run_once()).stats
    assert stats.events_applied == 1
    assert stats.orphans == 0
    assert READS in plan.together
    state = await load(memory_storage, diamond(), "wf-cold")
    assert state.task(0).state is TaskState.QUEUED  # activated: the root was dispatched


async def test_a_workflow_without_blobs_is_still_an_orphan(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await memory_storage.event_queue.send(encode(ActivateEvent(workflow_id="wf-gone")))
    plan = InFlight()
    coord = Coordinator(faulty(memory_storage, plan), NAMES, fast_options(), clock=clock)
    stats = (await coord.run_once()).stats
    assert stats.orphans == 1
    assert stats.dead_lettered == 0
    assert memory_storage.event_queue.peek_texts() == []  # acknowledged
