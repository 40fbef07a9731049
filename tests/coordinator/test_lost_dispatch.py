"""The lost-dispatch repair by the empty-queue signal (the one ``dagq doctor`` shows): a queued
attempt whose task queue holds no message is re-sent a minute after its send, not a day; and
every sweep leaves its mark in the registry."""

from __future__ import annotations

from shared.coordinator import Coordinator
from shared.messages import decode_task_message
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, fast_options, submit

NAMES = ResourceNames("mem")


async def test_a_message_missing_from_an_empty_queue_is_resent_after_a_minute(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await submit(memory_storage, diamond(), "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)  # the default: a day
    await coord.run_once()
    queue = memory_storage.queues.get(NAMES.task_queue("cpu"))
    [lost] = await queue.receive(1, 1)
    await queue.delete(lost)  # the task message vanished
    clock.advance(30)
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 0  # within the grace
    clock.advance(31)
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 1
    [again] = queue.peek_texts()
    assert decode_task_message(again).key == decode_task_message(lost.text).key
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 0  # on its queue again


async def test_a_message_still_on_its_queue_is_not_resent(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await submit(memory_storage, diamond(), "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()
    queue = memory_storage.queues.get(NAMES.task_queue("cpu"))
    await queue.receive(1, 3600)  # a worker holds it (invisible, still on the queue)
    clock.advance(600)
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 0
    assert len(queue.peek_texts()) == 1


async def test_each_sweep_marks_when_it_ran(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_sweeps()
    assert await memory_storage.workflows.job_marks() == {"sweep": clock.now}
    clock.advance(5)
    await coord.run_sweeps()
    assert await memory_storage.workflows.job_marks() == {"sweep": clock.now}


def test_the_setting_and_the_engine_agree_on_the_default_grace() -> None:
    from shared.engine.sweep import EMPTY_QUEUE_GRACE_S
    from shared.settings import Settings

    assert Settings.model_fields["empty_queue_repair_after_s"].default == EMPTY_QUEUE_GRACE_S


async def test_the_empty_queue_repair_waits_out_the_event_queues_backlog(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    """A task whose message is gone from its queue because a worker ran it, and whose report
    waits in the event queue's backlog, is not lost: the repair's grace grows by the age of the
    oldest event (issue 30 item 3: re-sent dispatches under a backlog, 0.08 per task at 10,000
    workflows). Once the backlog is gone, a lost message is re-sent as before."""
    await submit(memory_storage, diamond(), "wf", clock())
    coord = Coordinator(memory_storage, NAMES, fast_options(), clock=clock)
    await coord.run_once()
    queue = memory_storage.queues.get(NAMES.task_queue("cpu"))
    [ran] = await queue.receive(1, 1)
    await queue.delete(ran)  # its worker ran it; its report waits behind a backlog
    await memory_storage.event_queue.send("a report of another workflow, waiting its turn")
    clock.advance(61)
    updater = coord._passes.updater
    await updater.note_empty_queues(["cpu"])
    assert (updater.empty_queues, updater.event_backlog_s) == (frozenset({"cpu"}), 61.0)
    [waiting] = await memory_storage.event_queue.receive(1, 30)
    await memory_storage.event_queue.delete(waiting)  # the backlog drained
    await updater.note_empty_queues(["cpu"])
    assert (updater.empty_queues, updater.event_backlog_s) == (frozenset({"cpu"}), 0.0)
    assert (await coord.run_sweeps()).stats.tasks_dispatched == 1  # no backlog: lost, re-sent
