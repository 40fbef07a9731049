"""The coordinator enqueues notifications (issue 29): one message per (event, webhook) on the
notify queue when a workflow ends or a task fails for good, none for workflows without
``notify:``; it never calls an endpoint itself."""

from __future__ import annotations

import dataclasses

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.definition.workflow import CompiledWorkflow, NotifyTarget
from shared.messages import NotifyMessage
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, drive, fan, load, retrying, submit

NAMES = ResourceNames("mem")
HOOK = "https://hooks.example.com/dagq"


def with_targets(wf: CompiledWorkflow, *targets: NotifyTarget) -> CompiledWorkflow:
    return dataclasses.replace(wf, notify=targets)


def notify_messages(storage: MemoryStorage) -> list[NotifyMessage]:
    queue = storage.queues.get(NAMES.notify_queue)
    return [NotifyMessage.model_validate_json(t) for t in queue.peek_texts()]  # type: ignore[attr-defined]


async def run(storage: MemoryStorage, clock: FakeClock, wf: CompiledWorkflow, **script: Behavior
              ) -> None:  # fmt: skip
    await submit(storage, wf, "wf1", clock())
    worker = SyntheticWorker(storage, NAMES, ["cpu"], script, clock=clock)  # type: ignore[arg-type]

    async def done() -> bool:
        return (await load(storage, wf, "wf1")).status.is_terminal

    await drive(storage, NAMES, worker, done, clock=clock)


async def test_a_completed_run_enqueues_one_message_per_interested_webhook(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = with_targets(
        diamond(),
        NotifyTarget(HOOK),
        NotifyTarget("https://b.example/", ("failed",)),
        NotifyTarget("https://c.example/", ("completed", "task_failed")),
    )
    await run(memory_storage, clock, wf)
    sent = notify_messages(memory_storage)
    assert [(m.event, m.target, m.task) for m in sent] == [("completed", 0, None),
                                                           ("completed", 2, None)]  # fmt: skip
    state = await load(memory_storage, wf, "wf1")
    assert {(m.workflow_id, m.run, m.incarnation) for m in sent} == {
        ("wf1", state.run, state.incarnation)
    }


async def test_a_failed_task_and_run_are_both_told(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = with_targets(diamond(), NotifyTarget(HOOK, ("failed", "task_failed")))
    await run(memory_storage, clock, wf, b=Behavior(always_fail=True))
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.FAILED
    events = [(m.event, m.task) for m in notify_messages(memory_storage)]
    assert ("task_failed", "b") in events
    assert events[-1] == ("failed", None)
    assert events.count(("failed", None)) == 1


async def test_no_notify_no_message(memory_storage: MemoryStorage, clock: FakeClock) -> None:
    await run(memory_storage, clock, diamond(), b=Behavior(always_fail=True))
    assert notify_messages(memory_storage) == []


async def test_a_failure_that_a_retry_mends_is_no_task_failure(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = with_targets(diamond(**retrying(2)), NotifyTarget(HOOK, ("completed", "task_failed")))
    await run(memory_storage, clock, wf, b=Behavior(fail_times=2))
    assert (await load(memory_storage, wf, "wf1")).status is WorkflowStatus.COMPLETED
    assert [(m.event, m.task) for m in notify_messages(memory_storage)] == [("completed", None)]


async def test_many_failures_each_told_once(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = with_targets(fan(30), NotifyTarget(HOOK, ("task_failed",)))
    failing = {f"leaf{i:05d}": Behavior(always_fail=True) for i in range(0, 30, 3)}
    await run(memory_storage, clock, wf, **failing)
    told = [m.task for m in notify_messages(memory_storage)]
    assert sorted(told) == sorted(failing)  # type: ignore[type-var]
