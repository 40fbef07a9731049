"""A task's recorded inputs are what it ran on, under every dependency policy.

Under ``any``, N-of and ``all_settled`` an attempt's upstream is whatever parents had finished when
it was sent, and dispatch happens before the flush. The simulation's seed 2169766: a pass applied
parent t2's completion and sent child t3 attempt 1 with t2's output, then lost its state write (t2's
event back on the queue); the next pass applied parent t0's completion and sent t3 attempt 1 again,
with t0's output, and flushed. A worker claimed the first copy, so t3 ran on t2's output while the
state, which took its report, holds t0's (and t2 later ended cancelled).

The task message carries a digest of its upstream, the worker echoes it, and a report whose digest
is not the one the state recorded for its attempt is not taken: the task runs again on the state's
inputs, as a fresh attempt that does not spend its retry budget.
"""

from __future__ import annotations

from typing import Any

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared import engine
from shared.api import service
from shared.coordinator import Coordinator
from shared.coordinator.dispatch import build_message
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Dispatch
from shared.engine.state import RuntimeState
from shared.messages import TaskCompletedEvent, decode_event, encode
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, task

NAMES = ResourceNames("mem")


def _workflow(policy: Any, **child: Any) -> CompiledWorkflow:
    return CompiledWorkflow.of(
        "fan-in",
        [task("t0"), task("t2"), task("t3", (0, 1), dep_policy=policy, **child)],
    )


def _worker(storage: MemoryStorage, clock: FakeClock) -> SyntheticWorker:
    behaviors = {name: Behavior(output={"from": name}) for name in ("t0", "t2")}
    behaviors["t3"] = Behavior(output=lambda message, upstream: {"saw": sorted(upstream)})
    # One message per event: the lost pass below takes t2's completion message alone.
    return SyntheticWorker(storage, NAMES, ["cpu"], behaviors, clock=clock, batch_reports=False)


def ran_on_recorded_inputs(
    wf: CompiledWorkflow, state: RuntimeState, worker: SyntheticWorker
) -> list[str]:
    """The completed tasks whose accepted run used an output the state does not hold for that
    parent (the simulation's end check, at any instant)."""
    wrong = []
    for i, tdef in enumerate(wf.tasks):
        if state.state_of(i) is not TaskState.COMPLETED:
            continue
        run = next(
            e
            for e in worker.history
            if e.message.task == tdef.name and e.message.attempt == state.attempt[i]
        )
        held = {wf.tasks[p].name: ref.inline for p in tdef.parents if (ref := state.outputs.get(p))}
        if any(held.get(name, object()) != value for name, value in run.upstream.items()):
            wrong.append(f"{tdef.name}/{state.attempt[i]} ran on {run.upstream}, state: {held}")
    return wrong


async def _lost_pass(storage: MemoryStorage, wf: CompiledWorkflow, clock: FakeClock) -> None:
    """A pass takes t2's completion (invisible for 600 s), applies it, sends what it dispatches
    (t3 attempt 1, on t2's output) and loses its state write."""
    received = await storage.event_queue.receive(32, 600)
    for message in received:
        event = decode_event(message.text)
        if not (isinstance(event, TaskCompletedEvent) and event.task == "t2"):
            await storage.event_queue.extend(message, 0)  # left for the next pass
            continue
        state = await load(storage, wf, "wf1")
        commands = engine.apply(wf, state, event, clock())
        for command in commands:
            assert isinstance(command, Dispatch)
            assert command.name == "t3"
            text = encode(build_message("wf1", wf, command))
            await storage.queues.get(NAMES.task_queue(command.queue)).send(text)
        assert commands


async def _two_passes(
    memory_storage: MemoryStorage, clock: FakeClock, wf: CompiledWorkflow
) -> tuple[Coordinator, SyntheticWorker]:
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = _worker(memory_storage, clock)
    await service.submit(memory_storage, wf, now=clock(), workflow_id="wf1", incarnation=7)
    await coordinator.run_once()  # t0/1 and t2/1 sent
    await worker.step()  # both complete
    await _lost_pass(memory_storage, wf, clock)
    await worker.step()  # t3/1 runs on t2's output (the lost pass's copy)
    return coordinator, worker


async def test_a_report_of_an_attempt_that_ran_on_other_inputs_is_not_taken(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = _workflow("any")
    coordinator, worker = await _two_passes(memory_storage, clock, wf)
    # This pass applies t0's completion (t3/1 sent again, on t0's output) and t3/1's report.
    result = await coordinator.run_once()
    state = await load(memory_storage, wf, "wf1")
    assert ran_on_recorded_inputs(wf, state, worker) == []
    assert state.state_of(2) is not TaskState.COMPLETED
    assert state.attempt[2] == 2
    assert state.base_attempt[2] == 1
    assert result.stats.other_inputs == 1
    (past,) = state.history[2]
    assert past.attempt == 1
    assert past.error is not None
    assert "other inputs" in past.error
    await worker.step()  # t3/2 on t0's output; the second copy of t3/1 is a duplicate
    await coordinator.run_once()
    clock.advance(601)  # t2's completion comes back
    await coordinator.run_once()
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED, state.error
    assert ran_on_recorded_inputs(wf, state, worker) == []
    assert state.attempt[2] == 2
    assert state.outputs[2].inline == {"saw": ["t0"]}
    assert worker.duplicates_dropped == 1


async def test_under_policy_all_a_child_carries_a_digest_and_a_root_none(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # A parent may run again for other inputs after a child's send (seed 3708833): every task
    # with parents carries its upstream's digest; a root has no upstream to tell.
    wf = _workflow("all")
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = _worker(memory_storage, clock)
    await service.submit(memory_storage, wf, now=clock(), workflow_id="wf1", incarnation=7)
    for _ in range(3):
        await coordinator.run_once()
        await worker.step()
    await coordinator.run_once()
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED
    for e in worker.history:
        has_parents = bool(wf.tasks[wf.index[e.message.task]].parents)
        assert (e.message.upstream_digest is not None) is has_parents, e.message.task
    assert any(e.message.upstream_digest is not None for e in worker.history)
    assert not state.upstream_digests  # each cleared once its task finished
