"""Fault injection at every storage call of the coordinator, each followed by a fresh coordinator.

Every test runs in partition 0 and in partition 3 of a deployment (its own event queue, poison
queue and lease; the workflows' index rows and task messages name the partition).

Invariants checked after every fault: each workflow reaches the right terminal state, every task
has exactly the attempts its script implies (no completion lost or applied twice, attempts within
the retry policy), and no attempt ran twice (the synthetic worker claims attempts like the real one,
so a duplicate dispatch from the dispatch-before-flush window is dropped, never run).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.faults import Crash, FaultPlan, faulty
from tests.coordinator.helpers import (
    FakeClock,
    diamond,
    fan,
    fast_options,
    load,
    retrying,
    submit,
)

NAMES = ResourceNames("mem")
OPTIONS = fast_options(event_visibility_s=30)
WORKFLOWS: dict[str, CompiledWorkflow] = {
    "dia": diamond(**retrying(2)),
    "fan": CompiledWorkflow.of("fan", list(fan(5, **retrying(1)).tasks), max_parallelism=2),
}
SCRIPT = {"b": Behavior(fail_times=1), "leaf00002": Behavior(fail_times=1)}
EXPECTED_ATTEMPTS = {("dia", "b"): 2, ("fan", "leaf00002"): 2}

pytestmark = pytest.mark.parametrize("partition", [0, 3])


async def setup(partition: int) -> tuple[MemoryStorage, FakeClock, SyntheticWorker]:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock).for_partition(partition)
    for wid, wf in WORKFLOWS.items():
        await submit(storage, wf, wid, clock())
    worker = SyntheticWorker(storage, NAMES, ["cpu"], dict(SCRIPT), clock=clock)
    return storage, clock, worker


async def finished(storage: MemoryStorage) -> bool:
    for wid, wf in WORKFLOWS.items():
        if not (await load(storage, wf, wid)).status.is_terminal:
            return False
    return True


async def run_until_done(
    storage: MemoryStorage, clock: FakeClock, worker: SyntheticWorker, coord: Coordinator
) -> None:
    for _ in range(200):
        result = await coord.run_once(sweep=True)
        handled = await worker.step()
        if await finished(storage):
            return
        if not result.stats.events_received and not handled:
            clock.advance(OPTIONS.event_visibility_s + 1)
    raise AssertionError("workflows did not finish")


async def check(storage: MemoryStorage, worker: SyntheticWorker) -> None:
    for wid, wf in WORKFLOWS.items():
        state = await load(storage, wf, wid)
        assert state.status is WorkflowStatus.COMPLETED, (wid, state.status, state.error)
        for i, t in enumerate(wf.tasks):
            view = state.task(i)
            assert view.state is TaskState.COMPLETED, (wid, t.name, view)
            assert view.attempt == EXPECTED_ATTEMPTS.get((wid, t.name), 1), (wid, t.name)
    assert worker.executions, "nothing ran"
    assert max(worker.executions.values()) == 1, "an attempt ran twice"
    runs = sum(worker.executions.values())
    assert runs == sum(len(wf.tasks) for wf in WORKFLOWS.values()) + len(EXPECTED_ATTEMPTS)


async def crash_then_recover(plan: FaultPlan, partition: int) -> FaultPlan:
    storage, clock, worker = await setup(partition)
    doomed = Coordinator(faulty(storage, plan), NAMES, OPTIONS, clock=clock)
    with contextlib.suppress(Crash):
        await run_until_done(storage, clock, worker, doomed)
    await asyncio.sleep(0)  # let the dead coordinator's stray tasks hit their Crash
    clock.advance(OPTIONS.event_visibility_s + OPTIONS.lease_s + 1)  # redelivery; lease expiry
    fresh = Coordinator(storage, NAMES, OPTIONS, clock=clock)
    await run_until_done(storage, clock, worker, fresh)
    await check(storage, worker)
    return plan


async def test_clean_run_reference(partition: int) -> None:
    plan = await crash_then_recover(FaultPlan(), partition)
    names = set(plan.calls)
    # The pass touches every kind of storage call the fault tests below crash at.
    assert {"workflows.read_definition", "workflows.read_state", "workflows.write_state",
            "queue.send", "events.receive", "events.delete", "index.project",
            "lease.acquire", "index.active"} <= names  # fmt: skip


async def test_crash_before_and_after_every_storage_call(partition: int) -> None:
    total = len((await crash_then_recover(FaultPlan(), partition)).calls)
    assert total > 30
    for number in range(1, total + 1):
        for mode in ("before", "after"):
            plan = await crash_then_recover(FaultPlan(crash_at=number, mode=mode), partition)
            assert plan.dead, (number, mode)


async def test_crash_around_flushes_dispatches_and_deletes(partition: int) -> None:
    # The named windows: after dispatch before the flush, before/after the flush, before deletes.
    windows: list[tuple[str, Literal["before", "after"]]] = [
        ("queue.send", "after"),
        ("workflows.write_state", "before"),
        ("workflows.write_state", "after"),
        ("events.delete", "before"),
    ]
    for only, mode in windows:
        for number in range(1, 6):
            plan = FaultPlan(crash_at=number, mode=mode, only={only})
            await crash_then_recover(plan, partition)
            assert plan.dead, (only, mode, number)  # the crash happened where it was aimed
            assert plan.calls[number - 1] == only


async def test_concurrent_writer_forces_412_and_is_reapplied(partition: int) -> None:
    storage, clock, worker = await setup(partition)

    async def concurrent_write(_: str) -> None:
        # Another writer touches every state blob (same content, new ETag) right before the flush.
        for wid in WORKFLOWS:
            data, etag, meta = await storage.workflows.read_state(wid)
            await storage.workflows.write_state(wid, data, etag, meta)

    plan = FaultPlan(only={"workflows.write_state"},
                     hooks={n: concurrent_write for n in range(1, 12)})  # fmt: skip
    coord = Coordinator(faulty(storage, plan), NAMES, OPTIONS, clock=clock)
    conflicts = 0
    for _ in range(200):
        result = await coord.run_once(sweep=True)
        conflicts += result.stats.flush_conflicts
        handled = await worker.step()
        if await finished(storage):
            break
        if not result.stats.events_received and not handled:
            clock.advance(OPTIONS.event_visibility_s + 1)
    assert conflicts >= 3
    await check(storage, worker)


async def lease_lost_at(at: int, partition: int) -> None:
    storage, clock, worker = await setup(partition)
    options = fast_options(event_visibility_s=30, renew_every_s=0.001)
    usurper = Coordinator(storage, NAMES, options, clock=clock, hold_lease=True)
    taken: list[int] = []
    noticed: list[int] = []

    async def break_and_take(_: str) -> None:
        await storage.lease.break_lease()
        assert (await usurper.run_once(budget_s=0.001)).leader  # the other one takes over
        taken.append(len(plan.calls))
        # The victim learns of the loss at its next renewal (every renew interval). Until then a
        # concurrent workflow update of its pass may still flush (If-Match keeps that safe: the
        # new holder re-read); from then on it must write nothing. Wait for it, a bounded while,
        # rather than a fixed 10 ms that a busy event loop may not give it.
        for _ in range(200):
            if victim.leadership.lost or not victim.leadership.held:
                noticed.append(len(plan.calls))
                return
            await asyncio.sleep(0.01)

    plan = FaultPlan(hooks={at: break_and_take})
    victim = Coordinator(faulty(storage, plan), NAMES, options, clock=clock)
    await victim.run_once(sweep=True)
    first_pass = len(plan.calls)
    await worker.step()
    await victim.run_once(sweep=True)
    assert taken, "the hook never ran"
    # Where the hook ran inside the renewal, the pass ended (cancelling it) before it saw the
    # victim learn: then the next pass is the first that knows, and it must write nothing.
    after = plan.calls[noticed[0] if noticed else first_pass :]
    assert "workflows.write_state" not in after, after
    assert "queue.send" not in after, after
    await run_until_done(storage, clock, worker, usurper)
    await check(storage, worker)


async def test_lease_lost_mid_pass_stops_writes(partition: int) -> None:
    for at in (2, 4, 7, 10):
        await lease_lost_at(at, partition)


async def test_every_event_delivered_twice(partition: int) -> None:
    storage, clock, worker = await setup(partition)
    events = storage.event_queue
    real_send = events.send

    async def send_twice(text: str, *, delay_s: float = 0.0) -> None:
        await real_send(text, delay_s=delay_s)
        await real_send(text, delay_s=delay_s)

    events.send = send_twice  # type: ignore[method-assign]
    await real_send(events.peek_texts()[0])  # the activates, twice too
    coord = Coordinator(storage, NAMES, OPTIONS, clock=clock)
    duplicates = 0
    for _ in range(200):
        result = await coord.run_once(sweep=True)
        duplicates += result.stats.duplicates
        handled = await worker.step()
        if await finished(storage):
            break
        if not result.stats.events_received and not handled:
            clock.advance(OPTIONS.event_visibility_s + 1)
    assert duplicates >= 10
    await check(storage, worker)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    crash_at=st.integers(min_value=1, max_value=400),
    mode=st.sampled_from(["before", "after"]),
    second_crash=st.integers(min_value=1, max_value=60),
)
async def test_random_double_crash(
    partition: int, crash_at: int, mode: Literal["before", "after"], second_crash: int
) -> None:
    """Two crashes in a row (the second in the recovering coordinator), then a clean one."""
    storage, clock, worker = await setup(partition)
    for plan in (FaultPlan(crash_at=crash_at, mode=mode),
                 FaultPlan(crash_at=second_crash, mode="after")):  # fmt: skip
        doomed = Coordinator(faulty(storage, plan), NAMES, OPTIONS, clock=clock)
        with contextlib.suppress(Crash):
            await run_until_done(storage, clock, worker, doomed)
        await asyncio.sleep(0)
        clock.advance(OPTIONS.event_visibility_s + OPTIONS.lease_s + 1)
    await run_until_done(storage, clock, worker, Coordinator(storage, NAMES, OPTIONS, clock=clock))
    await check(storage, worker)
