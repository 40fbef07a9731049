"""A coordinator's cached states are good for one lease tenure only (found by the simulation,
seed 5 of ``make sim`` before the fix: docs/simulation.md).

Between two tenures of one instance, others may hold the lease and write. A state cached from the
first tenure is then stale; a write from it fails its If-Match and is redone, but an update that
writes nothing — every event a duplicate, or refused — used to decide from the stale state: a
completion of an attempt that another instance had dispatched meanwhile was dead-lettered as
"never dispatched", and the workflow lost the event.
"""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, retrying, submit, task

NAMES = ResourceNames("mem")


async def test_a_state_cached_in_an_earlier_lease_tenure_is_read_again(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = CompiledWorkflow.of("one", [task("a", **retrying(1))])
    await submit(memory_storage, wf, "wf1", clock())
    first = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    other = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(
        memory_storage, NAMES, ["cpu"], {"a": Behavior(fail_times=2)}, clock=clock
    )
    await first.run_once()  # activates: a/1 is sent
    await worker.step()  # a/1 fails
    await first.run_once()  # a/2 is sent; the state (a queued at its last attempt) is cached
    await worker.step()  # a/2 fails
    await other.run_once()  # another instance: the workflow failed
    await service.retry(memory_storage, "wf1")
    await other.run_once()  # ...and reruns it: a/3 is sent and recorded
    await worker.step()  # a/3 completes
    await first.run_once()  # back to the first instance, whose cache says a is at attempt 2

    assert [d.reason for d in await memory_storage.deadletters.list()] == []
    state = await load(memory_storage, wf, "wf1")
    assert state.task(0).state is TaskState.COMPLETED
    assert state.status is WorkflowStatus.COMPLETED
