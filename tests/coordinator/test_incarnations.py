"""A purged workflow's late messages and events never reach the workflow submitted again under its
id (found by the simulation, seeds 1 and 1026 with ``--ops all``: docs/simulation.md).

Attempt numbers restart at 1 in the new workflow and the purge deleted the claim blobs, so nothing
but the incarnation tells an old run's ``a/1`` from the new one's: a late completion of the old
run was applied to the new one (a task "completed" that nothing of the new run ran). Each message
and event now carries the incarnation drawn at submit; an event of another incarnation is
dead-lettered with that reason, never applied (the worker's side:
tests/worker/test_incarnations.py).
"""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.messages import CancelEvent, RetryEvent, encode
from shared.names import ResourceNames
from shared.ops.purge import purge_workflow
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from shared.storage.ports import Queue
from tests.coordinator.helpers import FakeClock, fast_options, load, task

NAMES = ResourceNames("mem")
WF = CompiledWorkflow.of("one", [task("a")])


async def _peek(queue: Queue) -> str:
    """The text of the next message on ``queue``, left where it was."""
    (message,) = await queue.receive(1, 30)
    await queue.extend(message, 0)
    return message.text


async def _purged_and_submitted_again(
    storage: MemoryStorage, clock: FakeClock
) -> tuple[Coordinator, str]:
    """Run wf1 to completion, keeping its completion event; purge it; submit wf1 again and
    dispatch its a/1. Returns the coordinator and the old event's text."""
    coordinator = Coordinator(storage, NAMES, fast_options(), clock=clock)
    worker = SyntheticWorker(storage, NAMES, ["cpu"], {"a": Behavior(output="old")}, clock=clock)
    await service.submit(storage, WF, now=clock(), workflow_id="wf1", incarnation=1)
    await coordinator.run_once()  # a/1 sent
    await worker.step()  # a/1 completes
    old_event = await _peek(storage.event_queue)
    await coordinator.run_once()
    assert (await load(storage, WF, "wf1")).status is WorkflowStatus.COMPLETED
    await purge_workflow(storage, "wf1")
    clock.advance(60)
    await service.submit(storage, WF, now=clock(), workflow_id="wf1", incarnation=2)
    await coordinator.run_once()  # the new a/1 sent
    return coordinator, old_event


async def test_a_late_event_of_the_purged_workflow_is_not_applied_to_the_new_one(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator, old_event = await _purged_and_submitted_again(memory_storage, clock)
    await memory_storage.event_queue.send(old_event)  # the old run's completion, redelivered late
    await coordinator.run_once()

    state = await load(memory_storage, WF, "wf1")
    assert state.task(0).state is TaskState.QUEUED  # still waiting for the new run's worker
    assert state.status is WorkflowStatus.RUNNING
    (dead,) = await memory_storage.deadletters.list()
    assert "another incarnation of workflow 'wf1'" in dead.reason
    assert await memory_storage.event_queue.approximate_count() == 0


async def test_a_cancel_or_retry_of_the_purged_workflow_leaves_the_new_one_alone(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coordinator, _ = await _purged_and_submitted_again(memory_storage, clock)
    await memory_storage.event_queue.send(encode(CancelEvent(workflow_id="wf1", incarnation=1)))
    await memory_storage.event_queue.send(
        encode(RetryEvent(workflow_id="wf1", run=1, incarnation=1))
    )
    await coordinator.run_once()

    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.RUNNING
    reasons = sorted(d.reason for d in await memory_storage.deadletters.list())
    assert len(reasons) == 2
    assert all("of another incarnation" in reason for reason in reasons)


async def test_a_cancel_without_an_incarnation_acts_on_the_current_workflow(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    """The cancel-poll sweep (and an API of an older deployment) sends none."""
    coordinator, _ = await _purged_and_submitted_again(memory_storage, clock)
    await memory_storage.event_queue.send(encode(CancelEvent(workflow_id="wf1")))
    await coordinator.run_once()

    assert (await load(memory_storage, WF, "wf1")).status in (
        WorkflowStatus.CANCELLING,
        WorkflowStatus.CANCELLED,
    )
    assert await memory_storage.deadletters.list() == []
