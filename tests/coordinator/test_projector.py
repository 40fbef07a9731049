"""The index write-behind (``projector.py``): a coordinator that keeps its lease between passes
writes a busy workflow's row at most every ``project_every_s`` (at the cycle's end on a status
change), the rows of a cycle in batches (one request per 100 rows), and writes what it held back
before it gives the lease up. In memory."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from shared.coordinator import Coordinator
from shared.coordinator.projector import Projector
from shared.coordinator.stats import PassStats
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.projection import IndexRow
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryIndex, memory_storage
from tests.coordinator.helpers import fast_options, submit


class CountingIndex(MemoryIndex):
    def __init__(self) -> None:
        super().__init__()
        self.writes: Counter[str] = Counter()
        self.requests = 0

    async def project(self, row: IndexRow) -> None:
        self.requests += 1
        self.writes[row.workflow_id] += 1
        await super().project(row)

    async def project_many(self, rows: list[IndexRow]) -> None:
        self.requests += 1
        for row in rows:
            self.writes[row.workflow_id] += 1
            await super().project(row)


def _row(status: WorkflowStatus, done: int) -> IndexRow:
    return IndexRow("w1", "wf", status, 1.0, 2.0, total=3, counts={"completed": done})


async def test_rows_that_are_not_due_wait_for_a_later_flush_or_the_release() -> None:
    index = CountingIndex()
    projector = Projector(index, project_every_s=3600.0)
    stats = PassStats()
    await projector.project(_row(WorkflowStatus.RUNNING, 0), stats)  # first sight: due
    await projector.flush(stats, due_only=True)  # the cycle ends
    assert index.writes["w1"] == 1
    await projector.project(_row(WorkflowStatus.RUNNING, 1), stats)  # same status: held back
    await projector.flush(stats, due_only=True)  # a pass ends, the lease is kept
    assert index.writes["w1"] == 1
    assert projector.pending == 1
    await projector.project(_row(WorkflowStatus.COMPLETED, 3), stats)  # status change: due
    await projector.flush(stats, due_only=True)
    assert index.writes["w1"] == 2
    assert projector.pending == 0


async def test_the_rows_of_a_cycle_are_written_in_batches_of_a_hundred() -> None:
    index = CountingIndex()
    projector = Projector(index, project_every_s=3600.0)
    stats = PassStats()
    for i in range(250):
        row = replace(_row(WorkflowStatus.RUNNING, 0), workflow_id=f"w{i:03d}", created_at=1.0 + i)
        await index.create(row)  # the API creates rows; a projection only updates them
        await projector.project(row, stats)
    await projector.flush(stats, due_only=True)
    assert index.requests == 3  # 100 + 100 + 50
    assert len(index.rows) == 250
    assert stats.projections == 250


async def test_a_coordinator_writes_held_back_rows_before_it_releases_its_lease() -> None:
    storage = memory_storage("mem")
    index = CountingIndex()
    storage = replace(storage, index=index)
    options = replace(fast_options(), project_every_s=3600.0)
    coordinator = Coordinator(storage, ResourceNames("mem"), options, hold_lease=True)
    tasks = [TaskDef(name="a", cmd="true", queue="cpu")]
    await submit(storage, CompiledWorkflow.of("one", tasks), "w1", 1_800_000_000.0)
    await coordinator.run_once()  # activate: pending -> running, written at the cycle's end
    assert index.writes["w1"] == 1
    projector = coordinator._passes.updater.projector
    await projector.project(replace(index.rows[next(iter(index.rows))], total=7), PassStats())
    assert projector.pending == 1
    await coordinator.release_lease()
    assert projector.pending == 0
    assert index.writes["w1"] == 2
