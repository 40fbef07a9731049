"""Partitioned coordination in memory: a workflow's submit, events, control events, sweeps and task
messages all stay in its partition; raising the partition count in flight misroutes nothing."""

from __future__ import annotations

from devtools.testing.partition_ids import ids_in_each_partition
from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.deployment import partition_from_metadata, partition_of
from shared.messages import CancelEvent, decode_task_message, encode
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.faults import FaultPlan, faulty
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load

NAMES = ResourceNames("mem")
OPTIONS = fast_options(event_visibility_s=30)


async def run(
    storage: MemoryStorage,
    coords: dict[int, Coordinator],
    worker: SyntheticWorker,
    clock: FakeClock,
    done: list[str],
    wf: CompiledWorkflow,
) -> None:
    for _ in range(200):
        moved = 0
        for coord in coords.values():
            moved += (await coord.run_once(sweep=True)).stats.events_received
        moved += await worker.step()
        states = [await load(storage, wf, wid) for wid in done]
        if all(s.status.is_terminal for s in states):
            return
        if not moved:
            clock.advance(OPTIONS.event_visibility_s + 1)
    raise AssertionError("workflows did not finish")


def coordinators(storage: MemoryStorage, clock: FakeClock, count: int) -> dict[int, Coordinator]:
    return {
        p: Coordinator(storage.for_partition(p), NAMES, OPTIONS, clock=clock) for p in range(count)
    }


async def test_everything_about_a_workflow_stays_in_its_partition() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    wf = diamond()
    by_partition = ids_in_each_partition(4, 2, "w")
    for wids in by_partition.values():
        for wid in wids:
            await service.submit(storage, wf, now=clock(), workflow_id=wid, partitions=4)
    for p, wids in by_partition.items():
        queue = storage.for_partition(p).event_queue
        assert sorted(t.split('"workflow_id":"')[1].split('"')[0] for t in queue.peek_texts()) == (
            sorted(wids)
        )
    coords = coordinators(storage, clock, 4)
    for coord in coords.values():  # activations: each coordinator sees only its own
        result = await coord.run_once()
        assert result.stats.events_applied == 2
    task_queue = storage.queues.get(NAMES.task_queue("cpu"))
    for text in task_queue.peek_texts():
        message = decode_task_message(text)
        assert message.partition == partition_of(message.workflow_id, 4)
    # A cancel goes to the workflow's partition; the others never hear of it.
    cancelled = by_partition[2][0]
    await service.cancel(storage, cancelled, reason="test")
    assert len(storage.for_partition(2).event_queue.peek_texts()) == 1
    assert all(not storage.for_partition(p).event_queue.peek_texts() for p in (0, 1, 3))
    worker = SyntheticWorker(storage, NAMES, ["cpu"], {"*": Behavior()}, clock=clock)
    everything = [wid for wids in by_partition.values() for wid in wids]
    await run(storage, coords, worker, clock, everything, wf)
    for p, wids in by_partition.items():
        for wid in wids:
            state = await load(storage, wf, wid)
            expected = WorkflowStatus.CANCELLED if wid == cancelled else WorkflowStatus.COMPLETED
            assert state.status is expected, (wid, state.status)
            metadata = await storage.workflows.state_metadata(wid)
            assert partition_from_metadata(metadata) == p  # coordinator flushes keep it
    rows = {row.workflow_id: row for row in (await storage.index.list(limit=100)).rows}
    assert {wid: rows[wid].partition for wid in everything} == {
        wid: p for p, wids in by_partition.items() for wid in wids
    }
    assert max(worker.executions.values()) == 1


async def test_sweeps_cover_only_their_partition() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    wf = diamond()
    by_partition = ids_in_each_partition(2, 1, "w")
    for wids in by_partition.values():
        await service.submit(storage, wf, now=clock(), workflow_id=wids[0], partitions=2)
    for p in (0, 1):  # the activate events are lost: only the activate-repair sweep can help
        queue = storage.for_partition(p).event_queue
        for received in await queue.receive(32, 30):
            await queue.delete(received)
    clock.advance(OPTIONS.activate_repair_after_s + 1)
    one = Coordinator(storage.for_partition(1), NAMES, OPTIONS, clock=clock)
    result = await one.run_once(sweep=True)
    assert result.stats.sweep.get("activate_repair") == 1
    assert (await load(storage, wf, by_partition[1][0])).status is WorkflowStatus.RUNNING
    assert (await load(storage, wf, by_partition[0][0])).status is WorkflowStatus.PENDING


async def test_raising_the_partition_count_moves_nothing_in_flight() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    wf = diamond()
    old = [f"old{i}" for i in range(6)]
    for wid in old:
        await service.submit(storage, wf, now=clock(), workflow_id=wid, partitions=1)
    worker = SyntheticWorker(storage, NAMES, ["cpu"], {"*": Behavior()}, clock=clock)
    single = coordinators(storage, clock, 1)
    await single[0].run_once()  # the old workflows are running: their tasks name partition 0
    await worker.step()
    # The deployment now has 4 partitions: new workflows spread, the old ones stay in 0.
    new = [wid for wids in ids_in_each_partition(4, 2, "new").values() for wid in wids]
    for wid in new:
        await service.submit(storage, wf, now=clock(), workflow_id=wid, partitions=4)
    await service.cancel(storage, old[0])  # routed by what the old workflow recorded
    assert "old0" in storage.event_queue.peek_texts()[-1]
    await run(storage, coordinators(storage, clock, 4), worker, clock, old + new, wf)
    rows = {row.workflow_id: row for row in (await storage.index.list(limit=100)).rows}
    assert all(rows[wid].partition == 0 for wid in old)
    assert {rows[wid].partition for wid in new} == {0, 1, 2, 3}
    assert (await load(storage, wf, old[0])).status is WorkflowStatus.CANCELLED
    for wid in old[1:] + new:
        assert (await load(storage, wf, wid)).status is WorkflowStatus.COMPLETED
    assert max(worker.executions.values()) == 1


async def test_an_event_sent_to_another_partition_is_refused_and_moves_nothing() -> None:
    # Before: partition 0's coordinator applied an event for a partition-1 workflow and rewrote
    # its state metadata and index row to partition 0.
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    wf = diamond()
    [wid] = ids_in_each_partition(2, 1, "w")[1]
    await service.submit(storage, wf, now=clock(), workflow_id=wid, partitions=2)
    await coordinators(storage, clock, 2)[1].run_once()  # activated in its own partition
    before = (await storage.workflows.read_state(wid)).data
    stray = CancelEvent(workflow_id=wid, reason="sent to the wrong queue")
    await storage.for_partition(0).event_queue.send(encode(stray))
    zero = Coordinator(storage.for_partition(0), NAMES, OPTIONS, clock=clock)
    result = await zero.run_once(sweep=True)
    assert result.stats.events_applied == 0
    (letter,) = await storage.deadletters.list()
    assert "belongs to partition 1, not 0" in letter.reason
    assert storage.for_partition(0).event_queue.peek_texts() == []
    assert (await storage.workflows.read_state(wid)).data == before
    assert partition_from_metadata(await storage.workflows.state_metadata(wid)) == 1
    (row,) = (await storage.index.list(limit=10)).rows
    assert (row.partition, row.status) == (1, "running")


async def test_a_state_read_checks_its_partition_without_a_request_of_its_own() -> None:
    # Before: every state read from storage went with a HEAD of the same blob for its partition
    # (2.1 of the requests per task of bench_concurrent); the read's own metadata says it.
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    [wid] = ids_in_each_partition(2, 1, "w")[1]
    await service.submit(storage, diamond(), now=clock(), workflow_id=wid, partitions=2)
    plan = FaultPlan()
    coord = Coordinator(faulty(storage.for_partition(1), plan), NAMES, OPTIONS, clock=clock)
    await coord.run_once()
    assert (await load(storage, diamond(), wid)).status is WorkflowStatus.RUNNING
    assert plan.calls.count("workflows.read_state") == 1
    assert "workflows.state_metadata" not in plan.calls
    assert "workflows.state_properties" not in plan.calls
