"""A state write that took effect but whose reply was lost still gets its index row (found by the
simulation, seed 1266 of ``make sim SEEDS=3000``: docs/simulation.md).

The coordinator that wrote sees a failure, so the events go back to the queue and it projects
nothing; the coordinator that applies them again finds the state already as they leave it, writes
nothing, and projected nothing either. When the write changed one terminal status into another (a
retry of a cancelled workflow whose tasks had all completed made it completed), or made a terminal
workflow running again (here), no sweep looks at the row again (the sweeps read the active rows
only): the index said cancelled for good, and a running workflow was never swept.
"""

from __future__ import annotations

from typing import Any

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, task

NAMES = ResourceNames("mem")
WF = CompiledWorkflow.of("one", [task("a")])


class ReplyLost(Exception):
    """The write took effect; its reply never came."""


def _lose_the_next_write_reply(storage: MemoryStorage) -> None:
    workflows: Any = storage.workflows
    write = workflows.write_state

    async def lost(*a: Any, **kw: Any) -> str:
        workflows.write_state = write
        await write(*a, **kw)
        raise ReplyLost

    workflows.write_state = lost


async def test_a_status_written_with_its_reply_lost_reaches_the_index(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage, NAMES, ["cpu"], {"a": Behavior(output="x")}, clock=clock
    )
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    await coordinator.run_once()  # a/1 sent
    await service.cancel(memory_storage, "wf1", reason="test")
    await coordinator.run_once()  # cancelling: a/1 may finish within the grace
    await worker.step()  # a/1 completes
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.CANCELLED
    (row,) = [r async for r in _rows(memory_storage)]
    assert row.status is WorkflowStatus.CANCELLED

    await service.retry(memory_storage, "wf1")  # a/2 sent, the workflow running again
    _lose_the_next_write_reply(memory_storage)
    await coordinator.run_once()  # the write takes effect, the events go back
    clock.advance(60)
    for _ in range(3):
        await coordinator.run_once(sweep=True)
        clock.advance(60)

    state = await load(memory_storage, WF, "wf1")
    (row,) = [r async for r in _rows(memory_storage)]
    assert row.status is state.status
    assert await memory_storage.event_queue.approximate_count() == 0


async def _rows(storage: MemoryStorage) -> Any:
    for row in storage.index.rows.values():
        yield row
