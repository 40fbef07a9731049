"""A workflow whose roots the submit dispatched (issue 32, ``shared.api.root_dispatch``): its
state was created running by the API, never written by a coordinator. The sweeps leave it alone
(no activation, no re-send of a root whose message is on its queue, no index repair), and the
coordinator's first load of it, at the root's report, carries it to the end as any other."""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load

NAMES = ResourceNames("mem")


async def test_sweeps_leave_it_and_the_first_load_runs_it_to_the_end(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    result = await service.submit(memory_storage, wf, now=clock(), workflow_id="wf1", names=NAMES)
    assert result.status is WorkflowStatus.RUNNING
    state_etag = (await memory_storage.workflows.read_state("wf1")).etag
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    clock.advance(45)  # past the activate-repair's 30 s, short of the empty-queue repair's 60 s
    await coordinator.run_once(sweep=True)
    assert (await memory_storage.workflows.read_state("wf1")).etag == state_etag  # untouched
    cpu = memory_storage.queues.get(NAMES.task_queue("cpu"))
    assert await cpu.approximate_count() == 1  # a/1, once: neither activated nor re-sent
    assert await memory_storage.event_queue.approximate_count() == 0

    worker = SyntheticWorker(memory_storage, NAMES, ["cpu"], {"*": Behavior()}, clock=clock)
    for _ in range(3):  # a; then b and c; then d
        await worker.step()
        await coordinator.run_once()
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED
    assert max(worker.executions.values()) == 1
    rows = (await memory_storage.index.list()).rows
    assert [(r.workflow_id, r.status) for r in rows] == [("wf1", WorkflowStatus.COMPLETED)]
