"""A rerun's attempts never collide with an attempt its workflow's earlier run may have sent.

Attempt numbers are what claims, logs and outputs are named by, so two task messages of one
attempt number must be the same dispatch. Two windows would break that, both a dispatch sent
before the coordinator's flush (docs/coordinator.md):

- a rerun's own messages go out before the state records the rerun: each carries its run, so a
  worker does not take a redelivery of one for a late message of the failed run (the
  simulation's seed 1906; tests/worker/test_finished_workflow.py holds the worker's side);
- a pass that sent a retry and died before its flush, overtaken by a cancel: the state ends with
  the task cancelled and no record of that retry, so a rerun must number the task's attempts past
  every attempt the cancelled run may have sent.
"""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.coordinator.dispatch import build_message
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Dispatch
from shared.messages import encode
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, retrying, task

NAMES = ResourceNames("mem")


async def test_a_reruns_task_message_carries_the_new_run(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = CompiledWorkflow.of("one", [task("a")])
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage, NAMES, ["cpu"], {"a": Behavior(fail_times=1)}, clock=clock
    )
    await service.submit(memory_storage, wf, now=clock(), workflow_id="wf1")
    await coordinator.run_once()
    await worker.step()  # a/1 fails: the workflow fails
    await coordinator.run_once()
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.FAILED
    await service.retry(memory_storage, "wf1")
    await coordinator.run_once()  # the rerun dispatches a/2
    await worker.step()
    first, second = (execution.message for execution in worker.history)
    assert (first.attempt, first.run) == (1, 1)
    assert (second.attempt, second.run) == (2, 2)
    await coordinator.run_once()
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.COMPLETED


async def test_a_rerun_after_a_cancel_skips_the_attempts_a_lost_pass_may_have_sent(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = CompiledWorkflow.of("one", [task("a", **retrying(2))])
    coordinator = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage,
        NAMES,
        ["cpu"],
        {"a": Behavior(fail_times=1)},
        clock=clock,
        watch_cancel=True,
    )
    await service.submit(memory_storage, wf, now=clock(), workflow_id="wf1", incarnation=7)
    await coordinator.run_once()  # a/1 sent
    await worker.step()  # a/1 fails
    # A pass took a/1's failure (invisible until its visibility ends), sent the retry a/2 and
    # died before its flush.
    await memory_storage.event_queue.receive(1, 600)
    lost = build_message("wf1", wf, Dispatch(0, "a", 2, "cpu", incarnation=7, run=1))
    await memory_storage.queues.get(NAMES.task_queue("cpu")).send(encode(lost))
    await service.cancel(memory_storage, "wf1")
    await coordinator.run_once()  # the cancel overtakes the failure: a cancelled at attempt 1
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.CANCELLED
    await worker.step()  # a/2 of the cancelled run: claimed, reported cancelled
    clock.advance(601)  # a/1's failure comes back
    await coordinator.run_once()
    await service.retry(memory_storage, "wf1")
    for _ in range(4):
        await coordinator.run_once()
        await worker.step()
    state = await load(memory_storage, wf, "wf1")
    assert state.status is WorkflowStatus.COMPLETED, state.error
    assert worker.duplicates_dropped == 0
    assert state.state_of(0) is TaskState.COMPLETED
    assert state.attempt[0] == 4  # past attempt 3, the most the cancelled run could have sent
