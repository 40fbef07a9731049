"""Index-repair looks at terminal rows too, a page per sweep (``shared.coordinator.terminal_rows``).

Found by the simulation: seed 2096 (branch incarnation-blobs at 0bca51f) ended with two rows for
one id, both failed: a retry read the workflow, stalled while it was purged and its id submitted
again, then wrote the row of the workflow it had read; the sweeps' index-repair deletes such a row,
but it read only active rows and this one said failed. Seed 991 (the backlog trial on f65d8f3) left
a completed workflow's row saying cancelled (a projection that stalled and landed late; versioned
projections stop that one at the source, ``tests/storage/test_contract.py``), and a row saying
failed while its state runs again hides the workflow from every sweep.
"""

from __future__ import annotations

from dataclasses import replace

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
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


async def _sweeps(coordinator: Coordinator, clock: FakeClock, n: int = 3) -> None:
    for _ in range(n):
        clock.advance(60)
        await coordinator.run_once(sweep=True)


async def test_a_terminal_row_of_a_purged_workflow_written_back_goes(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    await service.cancel(memory_storage, "wf1", reason="test")
    await coordinator.run_once()
    (old,) = memory_storage.index.rows.values()
    old = replace(old)
    assert old.status is WorkflowStatus.CANCELLED
    await purge_workflow(memory_storage, "wf1")
    clock.advance(60)
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=2)
    await service.cancel(memory_storage, "wf1", reason="test")
    await coordinator.run_once()
    await memory_storage.index.create(old)  # the stalled retry's row, never checked

    await _sweeps(coordinator, clock)

    state = await load(memory_storage, WF, "wf1")
    rows = list(memory_storage.index.rows.values())
    assert [(r.created_at, r.status) for r in rows] == [(state.created_at, state.status)]


async def test_a_terminal_row_behind_its_state_is_rewritten(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage, NAMES, ["cpu"], {"a": Behavior(output="x")}, clock=clock
    )
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    await coordinator.run_once()
    await worker.step()
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.COMPLETED
    (row,) = memory_storage.index.rows.values()
    row.status = WorkflowStatus.CANCELLED  # what a stale writer left (an unversioned row)
    row.writes = None

    await _sweeps(coordinator, clock)

    (row,) = memory_storage.index.rows.values()
    assert row.status is WorkflowStatus.COMPLETED


async def test_each_state_write_is_a_newer_version_of_the_row(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    """The row's version is the state's run and write count: it grows with every write the
    coordinator makes, and the row carries the version of the state it was projected from."""
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage, NAMES, ["cpu"], {"a": Behavior(output="x")}, clock=clock
    )
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    (row,) = memory_storage.index.rows.values()
    versions = [row.version]
    await coordinator.run_once()
    versions.append(next(iter(memory_storage.index.rows.values())).version)
    await worker.step()
    await coordinator.run_once()
    state = await load(memory_storage, WF, "wf1")
    (row,) = memory_storage.index.rows.values()
    versions.append(row.version)
    assert versions[0] == (1, 0)
    assert versions == sorted(set(versions))  # strictly newer each time
    assert row.version == (state.run, state.writes)
    assert state.status is WorkflowStatus.COMPLETED
