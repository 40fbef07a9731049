"""The lease on Functions instances (``Coordinator(keep_lease=True)``): kept while invocations keep
coming, given up after an idle period, waited for instead of bounced when its holder is idle, and
the holder runs overdue sweeps. In memory, with the real clock (the keeper's idle period is
short)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from shared.coordinator import Coordinator
from shared.messages import ActivateEvent, encode
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from tests.coordinator.helpers import diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
OPTIONS = replace(fast_options(), keep_lease_idle_s=0.2, lease_wait_s=2.0)


async def test_an_idle_holder_lets_another_instance_in_without_a_bounce() -> None:
    storage = memory_storage("mem")
    wf = diamond()
    first = Coordinator(storage, NAMES, OPTIONS, keep_lease=True)
    second = Coordinator(storage, NAMES, OPTIONS, keep_lease=True)
    await submit(storage, wf, "w1", 1_800_000_000.0)
    (message,) = await storage.event_queue.receive(1, 30)
    result = await first.handle_trigger_message(message.text, message.id, 1)
    assert result.trigger_applied
    assert first.leadership.held  # kept after the pass: the next one finds a warm cache
    assert await storage.lease.is_held()
    await submit(storage, wf, "w2", 1_800_000_000.0)
    (message,) = await storage.event_queue.receive(1, 30)
    # The holder is idle: it gives the lease up within its idle period, and the other instance,
    # which waits for it, applies the event instead of bouncing it.
    result = await second.handle_trigger_message(message.text, message.id, 1)
    assert result.trigger_applied
    assert second.bounces == 0
    assert not first.leadership.held
    assert (await load(storage, wf, "w2")).status is WorkflowStatus.RUNNING
    await second.close()
    assert not await storage.lease.is_held()


async def test_a_busy_holder_keeps_the_lease_and_the_other_instance_bounces_once() -> None:
    storage = memory_storage("mem")
    wf = diamond()
    options = replace(OPTIONS, lease_wait_s=0.5)
    holder = Coordinator(storage, NAMES, options, keep_lease=True)
    other = Coordinator(storage, NAMES, options, keep_lease=True)
    await submit(storage, wf, "w1", 1_800_000_000.0)
    (message,) = await storage.event_queue.receive(1, 30)
    assert (await holder.handle_trigger_message(message.text, message.id, 1)).trigger_applied
    stop = asyncio.Event()

    async def busy() -> None:  # invocations keep coming to the holder
        while not stop.is_set():
            await holder.handle_trigger_message(encode(ActivateEvent(workflow_id="w1")), "x", 1)
            await asyncio.sleep(0.05)

    keep_busy = asyncio.create_task(busy())
    try:
        text = encode(ActivateEvent(workflow_id="w1"))
        result = await other.handle_trigger_message(text, "m", 1)
    finally:
        stop.set()
        await keep_busy
    assert not result.trigger_applied
    assert result.trigger_requeued
    assert other.bounces == 1
    assert holder.leadership.held
    assert text in storage.event_queue.peek_texts()  # handed back, not lost
    await holder.close()


async def test_the_holder_runs_overdue_sweeps_in_its_trigger_passes() -> None:
    storage = memory_storage("mem")
    wf = diamond()
    options = replace(OPTIONS, sweep_overdue_s=0.0, activate_repair_after_s=0.0)
    coord = Coordinator(storage, NAMES, options, keep_lease=True)
    await submit(storage, wf, "lost", 1_700_000_000.0)  # its activate event is lost:
    for message in await storage.event_queue.receive(32, 30):
        await storage.event_queue.delete(message)
    await submit(storage, wf, "w1", 1_700_000_000.0)
    (message,) = await storage.event_queue.receive(1, 30)
    result = await coord.handle_trigger_message(message.text, message.id, 1)
    assert result.stats.sweep.get("activate_repair") == 1  # the sweep ran in the trigger's pass
    assert (await load(storage, wf, "lost")).status is WorkflowStatus.RUNNING
    await coord.close()
