"""A workflow the coordinator has not cached is loaded with one read (issue 32): its state blob
carries a small definition (version 9), so the definition blob is not read; a large definition or
a state written before is read from its blob after the state, and what a missing or foreign one
means is unchanged (an orphan, a dead letter for another partition's workflow)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from shared.api import service
from shared.codec.definition import encode_definition
from shared.codec.state import carried_definition
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.limits import MAX_CARRIED_DEFINITION_BYTES
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


async def _first_load(storage: MemoryStorage, clock: FakeClock) -> list[str]:
    """The reads of the coordinator's first pass over the one workflow submitted."""
    plan = FaultPlan(only=READS)
    coord = Coordinator(faulty(storage, plan), NAMES, fast_options(), clock=clock)
    stats = (await coord.run_once()).stats
    assert stats.events_applied == 1
    assert stats.orphans == 0
    return plan.calls


async def test_a_small_definition_comes_with_the_state_and_its_blob_is_not_read(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await service.submit(memory_storage, diamond(), now=clock(), workflow_id="wf-cold")
    stored = await memory_storage.workflows.read_state("wf-cold")
    assert stored.data[3] == 9  # the state carries the definition
    assert carried_definition(stored.data) == encode_definition(diamond())
    assert await _first_load(memory_storage, clock) == ["workflows.read_state"]
    state = await load(memory_storage, diamond(), "wf-cold")
    assert state.task(0).state is TaskState.QUEUED  # activated: the root was dispatched
    assert state.definition == encode_definition(diamond())  # kept through the coordinator's write


def _large() -> CompiledWorkflow:
    """A definition whose blob is larger than a state carries (random commands: zlib keeps them)."""
    rng = random.Random(32)
    cmds = [f"echo {rng.randbytes(400).hex()}" for _ in range(20)]
    tasks = [TaskDef(name=f"t{i}", cmd=cmd, queue="cpu") for i, cmd in enumerate(cmds)]
    return CompiledWorkflow.of("large", tasks)


async def test_a_large_definition_stays_in_its_blob_only(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = _large()
    assert len(encode_definition(wf)) > MAX_CARRIED_DEFINITION_BYTES
    await service.submit(memory_storage, wf, now=clock(), workflow_id="wf-large")
    stored = await memory_storage.workflows.read_state("wf-large")
    assert stored.data[3] == 6  # as before: no definition section (and no write yet)
    assert carried_definition(stored.data) is None
    calls = await _first_load(memory_storage, clock)
    assert calls == ["workflows.read_state", "workflows.read_definition"]
    state = await load(memory_storage, wf, "wf-large")
    assert state.task(0).state is TaskState.QUEUED


async def test_a_state_written_before_version_9_is_loaded_with_its_definition_blob(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await submit(memory_storage, diamond(), "wf-old", clock())  # no definition in the state
    calls = await _first_load(memory_storage, clock)
    assert calls == ["workflows.read_state", "workflows.read_definition"]
    state = await load(memory_storage, diamond(), "wf-old")
    assert state.task(0).state is TaskState.QUEUED
    assert state.definition is None


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
