"""Every task message carries the run of the workflow that dispatched it: a worker tells by it a
late redelivery (of a run that has finished: dropped) from an early one (of a rerun the stored
state does not show yet: run). Found by the simulation, seed 1906 (docs/simulation.md)."""

from __future__ import annotations

from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, task
from tests.support.synthetic_worker import Behavior, SyntheticWorker

NAMES = ResourceNames("mem")
WF = CompiledWorkflow.of("one", [task("a")])


async def test_a_reruns_task_message_carries_the_new_run(
    storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator = Coordinator(storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(storage, NAMES, ["cpu"], {"a": Behavior(fail_times=1)}, clock=clock)
    await service.submit(storage, WF, now=clock(), workflow_id="wf1")
    await coordinator.run_once()
    await worker.step()  # a/1 fails: the workflow fails
    await coordinator.run_once()
    assert (await load(storage, WF, "wf1")).status is WorkflowStatus.FAILED
    await service.retry(storage, "wf1")
    await coordinator.run_once()  # the rerun dispatches a/2
    await worker.step()
    first, second = (execution.message for execution in worker.history)
    assert (first.attempt, first.run) == (1, 1)
    assert (second.attempt, second.run) == (2, 2)
    await coordinator.run_once()
    assert (await load(storage, WF, "wf1")).status is WorkflowStatus.COMPLETED
