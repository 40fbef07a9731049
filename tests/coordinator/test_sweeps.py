"""The sweeps over the memory fakes: each repairs what a lost message or a crash left behind."""

from __future__ import annotations

import json

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared import codec, engine
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.engine.projection import index_row
from shared.messages import (
    ActivateEvent,
    TaskCompletedEvent,
    decode_task_message,
    encode,
)
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, fan, fast_options, load, submit, task

NAMES = ResourceNames("mem")


def cpu_texts(storage: MemoryStorage) -> list[str]:
    return storage.queues.get(NAMES.task_queue("cpu")).peek_texts()


async def submit_without_activate(storage: MemoryStorage, wf: CompiledWorkflow, wid: str,
                                  now: float) -> None:  # fmt: skip
    await submit(storage, wf, wid, now)
    for message in await storage.event_queue.receive(32, 1):
        await storage.event_queue.delete(message)


async def test_activate_repair_activates_old_pending_workflows(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit_without_activate(memory_storage, wf, "lost", clock())
    coord = Coordinator(
        memory_storage, NAMES, fast_options(activate_repair_after_s=30), clock=clock
    )
    result = await coord.run_sweeps()
    assert "activate_repair" not in result.stats.sweep  # too young: its event may be on its way
    assert (await load(memory_storage, wf, "lost")).status is WorkflowStatus.PENDING
    clock.advance(31)
    result = await coord.run_sweeps()
    assert result.stats.sweep["activate_repair"] == 1
    assert (await load(memory_storage, wf, "lost")).status is WorkflowStatus.RUNNING
    assert len(cpu_texts(memory_storage)) == 1
    result = await coord.run_sweeps()  # level-triggered: nothing more to do
    assert "activate_repair" not in result.stats.sweep
    assert len(cpu_texts(memory_storage)) == 1
    assert result.stats.flushes == 0  # an unchanged state is neither rewritten
    assert result.stats.projections == 0  # nor re-projected


async def test_cancel_poll_applies_a_lost_cancel(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()
    state = await load(memory_storage, wf, "wf")
    await memory_storage.index.request_cancel(
        "wf", state.created_at
    )  # the CancelEvent itself was lost
    result = await coord.run_sweeps()
    assert result.stats.sweep["cancel_poll"] == 1
    state = await load(memory_storage, wf, "wf")
    assert state.status is WorkflowStatus.CANCELLED  # nothing was running: cancelled at once
    row = await memory_storage.index.get("wf", state.created_at)
    assert row is not None
    assert row.status is WorkflowStatus.CANCELLED
    assert row.cancel_requested  # the projection never clears the durable flag
    result = await coord.run_sweeps()
    assert "cancel_poll" not in result.stats.sweep


async def test_poison_events_are_reapplied_or_dead_lettered(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit_without_activate(memory_storage, wf, "wf", clock())
    await memory_storage.event_poison_queue.send(encode(ActivateEvent(workflow_id="wf")))
    await memory_storage.event_poison_queue.send("{garbage")
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    result = await coord.run_sweeps()
    assert result.stats.sweep["poison"] == 2
    assert result.stats.dead_lettered == 1
    assert (await load(memory_storage, wf, "wf")).status is WorkflowStatus.RUNNING
    assert memory_storage.event_poison_queue.peek_texts() == []
    [letter] = await memory_storage.deadletters.list()
    assert letter.text == "{garbage"
    assert "malformed" in letter.reason


async def test_queue_timeout_fails_a_task_nobody_takes(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = CompiledWorkflow.of("qt", [task("a", queue="gpu", queue_timeout_s=60.0)])
    await submit(memory_storage, wf, "qt", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_sweeps()
    clock.advance(30)
    await coord.run_sweeps()
    assert (await load(memory_storage, wf, "qt")).status is WorkflowStatus.RUNNING
    clock.advance(31)
    result = await coord.run_sweeps()
    state = await load(memory_storage, wf, "qt")
    assert state.status is WorkflowStatus.FAILED
    assert state.task(0).state is TaskState.FAILED
    assert "queue_timeout" in (state.task(0).error or "")
    assert result.stats.workflows_finished == 1


async def test_lost_dispatch_is_resent_with_the_same_attempt(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(lost_dispatch_after_s=600), clock=clock)
    await coord.run_once()
    queue = memory_storage.queues.get(NAMES.task_queue("cpu"))
    [lost] = await queue.receive(1, 1)
    await queue.delete(lost)  # the task message vanished
    clock.advance(601)
    result = await coord.run_sweeps()
    assert result.stats.tasks_dispatched == 1
    [again] = cpu_texts(memory_storage)
    assert decode_task_message(again).key == decode_task_message(lost.text).key
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 0


async def test_index_repair_rewrites_a_stale_row(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()
    state = await load(memory_storage, wf, "wf")
    stale = index_row(wf, engine.new_state(wf, "wf", state.created_at))
    stale.status = WorkflowStatus.RUNNING
    await memory_storage.index.project(stale)  # a projection that lags behind the state
    result = await coord.run_sweeps()
    assert result.stats.sweep.get("index_repair") == 1
    row = await memory_storage.index.get("wf", state.created_at)
    assert row is not None
    assert row.counts == {"queued": 1, "pending": 3}


async def test_huge_fan_in_travels_as_an_upstream_blob(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = fan(600)
    await submit(memory_storage, wf, "big", clock())
    worker = SyntheticWorker(memory_storage, NAMES, ["cpu"], {"leaf*": Behavior(output="x" * 100)},
                             clock=clock)  # fmt: skip
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    upstream_blobs = 0
    for _ in range(50):
        result = await coord.run_once()
        upstream_blobs += result.stats.upstream_blobs
        if not await worker.step() and not result.stats.events_received:
            break
    state = await load(memory_storage, wf, "big")
    assert state.status is WorkflowStatus.COMPLETED
    assert upstream_blobs == 1
    sink = next(e for e in worker.history if e.message.task == "sink")
    assert sink.message.upstream is None
    assert sink.message.upstream_blob == NAMES.upstream_blob("big", "sink", 1)
    assert len(sink.upstream) == 600
    stored = json.loads(await memory_storage.outputs.get(NAMES.upstream_blob("big", "sink", 1)))
    assert stored["leaf00000"]["inline"] == "x" * 100


async def test_max_parallelism_is_never_exceeded(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = CompiledWorkflow.of("mp", list(fan(12).tasks), max_parallelism=3)
    await submit(memory_storage, wf, "mp", clock())
    worker = SyntheticWorker(memory_storage, NAMES, ["cpu"], clock=clock)
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    peak = 0
    for _ in range(100):
        await coord.run_once(sweep=True)
        state = await load(memory_storage, wf, "mp")
        in_flight = state.counts().get("queued", 0) + state.counts().get("running", 0)
        peak = max(peak, in_flight)
        assert in_flight <= 3
        assert len(cpu_texts(memory_storage)) <= 3
        if state.status.is_terminal:
            break
        await worker.step()
    assert state.status is WorkflowStatus.COMPLETED
    assert peak == 3


async def test_a_state_cached_before_another_leader_wrote_is_read_again(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    """Another coordinator moved the state on while this one held it in cache: a new lease tenure
    starts from storage, so nothing is lost or doubled and no flush even conflicts. (A write that
    races within a tenure gets its 412 and is re-applied: test_faults'
    test_concurrent_writer_forces_412_and_is_reapplied.)"""
    wf = diamond()
    await submit(memory_storage, wf, "wf", clock())
    one = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    two = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await one.run_once()  # activates; caches the state
    done_a = TaskCompletedEvent(workflow_id="wf", task="a", attempt=1, started_at=clock(),
                                finished_at=clock())  # fmt: skip
    await memory_storage.event_queue.send(encode(done_a))
    await two.run_once()  # a later leader applies a's completion
    data = (await memory_storage.workflows.read_state("wf")).data
    assert codec.decode_state(data, wf).task(0).state is TaskState.COMPLETED
    done_b = TaskCompletedEvent(workflow_id="wf", task="b", attempt=1, started_at=clock(),
                                finished_at=clock())  # fmt: skip
    await memory_storage.event_queue.send(encode(done_b))
    result = await one.run_once()  # a new tenure: the cache from the last one is not trusted
    assert result.stats.flush_conflicts == 0
    state = await load(memory_storage, wf, "wf")
    assert state.task(0).state is TaskState.COMPLETED
    assert state.task(1).state is TaskState.COMPLETED
