"""Coordinator logic over the in-memory storage fakes: fast, deterministic (a fake clock)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import JsonValue

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.coordinator import Coordinator, LeaseState
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.errors import LeaseError
from shared.messages import RetryEvent, TaskCompletedEvent, TaskMessage, encode
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.faults import Crash, FaultPlan, faulty
from tests.coordinator.helpers import FakeClock, diamond, drive, fast_options, load, submit

NAMES = ResourceNames("mem")


def worker_for(storage: MemoryStorage, clock: FakeClock, **kw: object) -> SyntheticWorker:
    return SyntheticWorker(storage, NAMES, ["cpu"], clock=clock, **kw)  # type: ignore[arg-type]


def parent_names(message: TaskMessage, upstream: dict[str, JsonValue]) -> JsonValue:
    return list(sorted(upstream))


async def test_diamond_completes_and_outputs_flow_downstream(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    worker = worker_for(
        memory_storage, clock,
        script={"b": Behavior(output={"b": 1}), "c": Behavior(output="c-out"),
                "d": Behavior(output=parent_names)},
    )  # fmt: skip

    async def done() -> bool:
        return (await load(memory_storage, wf, "wf1")).status.is_terminal

    await drive(memory_storage, NAMES, worker, done, clock=clock)
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED
    assert all(state.task(i).state is TaskState.COMPLETED for i in range(4))
    assert set(worker.executions.values()) == {1}
    sink = next(e for e in worker.history if e.message.task == "d")
    assert sink.upstream == {"b": {"b": 1}, "c": "c-out"}
    row = await memory_storage.index.active()
    assert row == []  # finished: no longer active, and projected as completed
    listed = (await memory_storage.index.list()).rows
    assert [r.status for r in listed] == [WorkflowStatus.COMPLETED]
    assert listed[0].counts == {"completed": 4}
    assert memory_storage.event_queue.peek_texts() == []


async def test_malformed_orphan_and_bad_id_events_never_stop_the_pass(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    await memory_storage.event_queue.send("not json at all")
    await memory_storage.event_queue.send('{"kind": "completed", "workflow_id": "wf1"}')
    await memory_storage.event_queue.send('{"kind": "activate", "workflow_id": "../../etc"}')
    await memory_storage.event_queue.send('{"kind": "activate", "workflow_id": "nosuchworkflow"}')
    done_event = TaskCompletedEvent(
        workflow_id="wf1", task="nosuchtask", attempt=1, started_at=1.0, finished_at=2.0
    )
    await memory_storage.event_queue.send(encode(done_event))
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    result = await coord.run_once()
    stats = result.stats
    assert stats.dead_lettered == 4  # not JSON, missing fields, unsafe id, unknown task
    assert stats.orphans == 1
    assert stats.tasks_dispatched == 1  # the activation still went through
    assert memory_storage.event_queue.peek_texts() == []
    letters = await memory_storage.deadletters.list()
    reasons = " | ".join(letter.reason for letter in letters)
    assert "malformed event" in reasons
    assert "nosuchtask" in reasons
    assert "invalid workflow id" in reasons
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.RUNNING


async def test_same_event_twice_is_applied_once(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()
    event = encode(TaskCompletedEvent(workflow_id="wf1", task="a", attempt=1, started_at=clock(),
                                      finished_at=clock()))  # fmt: skip
    await memory_storage.event_queue.send(event)
    await memory_storage.event_queue.send(event)
    result = await coord.run_once()
    assert result.stats.events_applied == 2
    assert result.stats.duplicates == 1
    assert result.stats.tasks_dispatched == 2  # b and c, once
    await memory_storage.event_queue.send(event)  # a late redelivery, in a later pass
    result = await coord.run_once()
    assert result.stats.duplicates == 1
    assert result.stats.tasks_dispatched == 0
    assert result.stats.flushes == 0
    cpu = memory_storage.queues.get(NAMES.task_queue("cpu"))
    assert sorted(t.split('"task":"')[1].split('"')[0] for t in cpu.peek_texts()) == ["a", "b", "c"]


async def test_second_coordinator_is_refused(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    first = Coordinator(memory_storage, NAMES, fast_options(), clock=clock, hold_lease=True)
    second = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    assert (await first.run_once()).leader
    refused = await second.run_once()
    assert not refused.leader
    assert refused.stats.lease is LeaseState.NOT_LEADER
    # The refused trigger message is re-sent, not lost (the host then deletes its copy).
    text = encode(TaskCompletedEvent(workflow_id="wf1", task="a", attempt=1, started_at=1.0,
                                     finished_at=2.0))  # fmt: skip
    bounced = await second.handle_trigger_message(text, "m1", 1)
    assert bounced.trigger_requeued
    assert not bounced.trigger_applied
    assert text in memory_storage.event_queue.peek_texts()
    await first.release_lease()
    clock.advance(5)  # the re-sent copy's small delay
    applied = await second.handle_trigger_message(text, "m1", 2)
    assert applied.trigger_applied
    assert not applied.trigger_requeued
    assert applied.stats.duplicates == 1  # the re-sent copy, drained in the same pass
    state = await load(memory_storage, wf, "wf1")
    assert state.task(0).state is TaskState.COMPLETED


async def test_trigger_message_is_handed_back_when_storage_fails(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    plan = FaultPlan(crash_at=1, only={"lease.acquire"}, error=ConnectionError)
    coord = Coordinator(faulty(memory_storage, plan), NAMES, fast_options(), clock=clock)
    result = await coord.handle_trigger_message('{"kind": "activate", "workflow_id": "x"}', "m", 1)
    assert result.trigger_requeued
    assert memory_storage.event_queue.peek_texts() == ['{"kind": "activate", "workflow_id": "x"}']


async def test_failed_send_leaves_events_unacked_then_recovers(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    plan = FaultPlan(crash_at=1, only={"queue.send"}, error=ConnectionError)
    coord = Coordinator(faulty(memory_storage, plan), NAMES, fast_options(), clock=clock)
    result = await coord.run_once()
    assert result.stats.send_failures == 1
    assert result.stats.events_unacked == 1
    assert result.stats.flushes == 0
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.PENDING
    clock.advance(61)  # the activate event is visible again
    result = await coord.run_once()
    assert result.stats.tasks_dispatched == 1
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.RUNNING
    assert memory_storage.event_queue.peek_texts() == []


async def test_run_forever_refuses_or_waits_for_the_lease(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = diamond()
    await submit(memory_storage, wf, "wf1", clock())
    holder = Coordinator(memory_storage, NAMES, fast_options(), clock=clock, hold_lease=True)
    assert (await holder.run_once()).leader
    stop = asyncio.Event()
    refused = Coordinator(memory_storage, NAMES, fast_options(renew_every_s=0.02), clock=clock)
    with pytest.raises(LeaseError, match="--wait-for-lease"):
        await refused.run_forever(stop)
    standby = Coordinator(memory_storage, NAMES, fast_options(renew_every_s=0.02), clock=clock)
    job = asyncio.create_task(standby.run_forever(stop, wait_for_lease=True))
    await asyncio.sleep(0.1)
    assert not job.done()  # waiting, not failing
    await holder.release_lease()  # the first coordinator stops
    text = encode(TaskCompletedEvent(workflow_id="wf1", task="a", attempt=1, started_at=1.0,
                                     finished_at=2.0))  # fmt: skip
    await memory_storage.event_queue.send(text)
    for _ in range(100):
        await asyncio.sleep(0.02)
        if (await load(memory_storage, wf, "wf1")).task(0).state is TaskState.COMPLETED:
            break
    stop.set()
    await job
    assert (await load(memory_storage, wf, "wf1")).task(0).state is TaskState.COMPLETED
    assert not await memory_storage.lease.is_held()  # released on stop


async def test_a_message_that_cannot_fit_fails_its_attempt(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    huge = CompiledWorkflow.of(
        "huge", [TaskDef(name="big", cmd="echo " + "x" * 60_000, queue="cpu", num_retries=1)]
    )
    await submit(memory_storage, huge, "huge", clock())
    result = await Coordinator(memory_storage, NAMES, fast_options(), clock=clock).run_once()
    state = await load(memory_storage, huge, "huge")
    assert state.status is WorkflowStatus.FAILED
    assert state.task(0).attempt == 2  # the retry could not be sent either
    assert "too large" in (state.task(0).error or "")
    assert result.stats.tasks_dispatched == 0
    assert memory_storage.queues.get(NAMES.task_queue("cpu")).peek_texts() == []


async def test_a_rerun_lost_in_a_crash_does_not_lose_the_rerun_s_completion(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # The coordinator applies a retry, dispatches attempt 2, and dies before flushing: the stored
    # state still says "a" failed at attempt 1 when attempt 2's completion arrives, while the
    # retry event waits out its visibility timeout. The completion must wait for it, not vanish.
    wf = CompiledWorkflow.of("one", [TaskDef(name="a", cmd="false", queue="cpu")])
    await submit(memory_storage, wf, "wf1", clock())
    failing = worker_for(memory_storage, clock, script={"a": Behavior(fail_times=1)})

    async def failed() -> bool:
        return (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.FAILED

    await drive(memory_storage, NAMES, failing, failed, clock=clock)
    await memory_storage.event_queue.send(encode(RetryEvent(workflow_id="wf1", run=1)))
    crashing = Coordinator(
        faulty(memory_storage, FaultPlan(crash_at=1, only={"workflows.write_state"})),
        NAMES, fast_options(), clock=clock,
    )  # fmt: skip
    with pytest.raises(Crash):
        await crashing.run_once()
    assert await failing.step() == 1  # attempt 2 runs and reports its completion
    assert failing.executions["wf1/a/2"] == 1

    clock.advance(fast_options().lease_s + 1)  # the dead coordinator's lease runs out
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    early = await coordinator.run_once()
    assert early.stats.deferred == 1
    assert early.stats.events_applied == 0
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.FAILED

    clock.advance(fast_options().event_visibility_s + 1)  # the retry and the completion return
    late = await coordinator.run_once()
    assert late.stats.events_applied == 2
    assert late.stats.deferred == 0
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED
    assert (state.task(0).state, state.task(0).attempt, state.run) == (TaskState.COMPLETED, 2, 2)


def unsendable(retries: int) -> CompiledWorkflow:
    return CompiledWorkflow.of(
        "huge", [TaskDef(name="big", cmd="echo " + "x" * 60_000, queue="cpu", num_retries=retries)]
    )


async def test_a_hundred_unsendable_retries_are_all_failed_none_dropped(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Each attempt that cannot be sent fails and dispatches the next: with 100 retries that is
    # 101 rounds of sending, more than the old fixed bound of 100 (which dropped the last one and
    # left the task queued for a day).
    wf = unsendable(100)
    await submit(memory_storage, wf, "huge", clock())
    result = await Coordinator(memory_storage, NAMES, fast_options(), clock=clock).run_once()
    state = await load(memory_storage, wf, "huge")
    assert (state.status, state.task(0).attempt) == (WorkflowStatus.FAILED, 101)
    assert result.stats.dispatch_rounds_exhausted == 0


async def test_dispatch_rounds_past_their_bound_are_counted_and_logged(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    from shared.coordinator import dispatch

    assert dispatch.dispatch_rounds(unsendable(100)) == 102
    monkeypatch.setattr(dispatch, "dispatch_rounds", lambda wf: 3)  # an engine gone wrong
    wf = unsendable(100)
    await submit(memory_storage, wf, "huge", clock())
    result = await Coordinator(memory_storage, NAMES, fast_options(), clock=clock).run_once()
    assert result.stats.dispatch_rounds_exhausted == 1
    assert result.stats.events_unacked == 1  # nothing flushed, the activate event comes back
    assert "workflow huge: dispatches of workflow huge did not settle in 3 rounds" in caplog.text
    assert (await load(memory_storage, wf, "huge")).status is WorkflowStatus.PENDING
