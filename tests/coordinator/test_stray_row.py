"""An index row of a purged workflow, written back after its id was submitted again, goes (found by
the simulation, seed 892 of ``make sim SEEDS=3000``: docs/simulation.md).

A repeated submit read the workflow, stalled while a purge deleted it and the id was submitted
again, then wrote the row of the workflow it had read and died before checking the state blob was
still that workflow (the check that deletes such a row again: tests/api/test_service.py). The row
of a workflow no longer stored stayed beside its successor's for good: index-repair, finding it
disagree with the state it named, wrote the successor's row instead, every sweep.
"""

from __future__ import annotations

from dataclasses import replace

from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.ops.purge import purge_workflow
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, task

NAMES = ResourceNames("mem")
WF = CompiledWorkflow.of("one", [task("a")])


async def test_the_row_of_a_purged_workflow_written_back_goes_at_the_next_sweep(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    (old,) = memory_storage.index.rows.values()
    old = replace(old)
    await service.cancel(memory_storage, "wf1", reason="test")
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.CANCELLED
    await purge_workflow(memory_storage, "wf1")
    clock.advance(60)
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=2)
    await memory_storage.index.create(old)  # the stalled repeated submit's row, never checked

    for _ in range(3):
        clock.advance(60)
        await coordinator.run_once(sweep=True)

    state = await load(memory_storage, WF, "wf1")
    rows = list(memory_storage.index.rows.values())
    assert [(r.created_at, r.status) for r in rows] == [(state.created_at, state.status)]
