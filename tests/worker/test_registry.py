"""A worker agent in the worker registry: registered while it runs, its running task shown, its
record removed on a clean stop, and a registry outage never stops it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from shared.storage.memory import memory_storage
from shared.storage.registry import WorkerRecord, WorkerTask
from tests.worker.agents import create_workflow, read_events, running_agent, send_task
from worker_agent.config import WorkerSettings
from worker_agent.registry import Presence


async def wait_for(probe: Callable[[], object], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await probe():  # type: ignore[misc]
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_a_running_agent_shows_its_queues_and_current_task_then_leaves(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Callable[..., WorkerSettings],
) -> None:
    settings = worker_settings(
        queues=["gpu", "cpu"], concurrency=2, registry_s=0.2, vm_size="Standard_NC4as_T4_v3"
    )
    started = time.time()
    await create_workflow(azure_storage, "wf-reg")
    records: list[WorkerRecord] = []

    async def busy() -> bool:
        records[:] = await azure_storage.registry.workers()
        return bool(records) and records[0].busy_slots == 1

    async with running_agent(settings, azure_storage):
        await send_task(azure_storage, names, "wf-reg", "sleepy", "sleep 2")
        await wait_for(busy)
        [mine] = records
        assert mine.worker_id == "test-worker"
        assert (mine.queues, mine.slots) == (["gpu", "cpu"], 2)
        assert mine.tasks == [WorkerTask("wf-reg", "sleepy", 1)]
        assert mine.version
        assert mine.host
        assert mine.server_seen is not None
        assert abs(mine.server_seen - time.time()) < 60
        await read_events(azure_storage, 1)

        async def idle() -> bool:
            return [r.busy_slots for r in await azure_storage.registry.workers()] == [0]

        await wait_for(idle)
        stopping = time.time()
    assert await azure_storage.registry.workers() == []  # a clean stop removes the record
    assert set(await azure_storage.registry.queues()) == {"gpu", "cpu"}  # ever polled: kept
    # The machine's life is kept too: the pool's VM-hours in `dagq cost` come from it.
    [machine] = await azure_storage.registry.machines(started - 7200, time.time() + 1)
    assert (machine.host, machine.vm_size) == (mine.host, "Standard_NC4as_T4_v3")
    assert machine.last_seen >= stopping  # the clean stop noted it at once (else: in 5 minutes)
    assert machine.booted_at <= started + 1 <= machine.last_seen + 1


class _Down:
    """A registry whose storage is unreachable."""

    calls = 0

    async def beat(self, record: WorkerRecord) -> None:
        self.calls += 1
        raise ConnectionError("storage unreachable")

    async def note_queues(self, queues: list[str], at: float) -> None:
        raise ConnectionError("storage unreachable")

    async def remove(self, worker_id: str) -> None:
        raise ConnectionError("storage unreachable")

    async def note_machine(self, life: object) -> None:
        raise ConnectionError("storage unreachable")


async def test_registry_failures_are_retried_and_never_raise() -> None:
    down = _Down()
    presence = Presence(
        down,  # type: ignore[arg-type]
        worker_id="w",
        queues=["cpu"],
        slots=1,
        interval_s=0.01,
    )
    beating = asyncio.create_task(presence.run())
    await asyncio.sleep(0.2)
    assert not beating.done()  # still trying
    beating.cancel()
    await presence.leave()  # no exception


class _Flaky(_Down):
    """A registry that fails its first ``down`` beats, then takes them."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.taken = asyncio.Event()

    async def beat(self, record: WorkerRecord) -> None:
        self.calls += 1
        if self.calls <= self.down:
            raise ConnectionError("storage unreachable")
        self.taken.set()

    async def note_queues(self, queues: list[str], at: float) -> None:
        pass

    async def note_machine(self, life: object) -> None:
        pass


async def test_a_failed_beat_is_tried_again_soon_not_a_whole_interval_later() -> None:
    # Before: a worker whose first beats failed stayed out of `dagq workers` for --registry-s.
    flaky = _Flaky(down=2)
    presence = Presence(
        flaky,  # type: ignore[arg-type]
        worker_id="w", queues=["cpu"], slots=1, interval_s=3600, retry_s=0.01,
    )  # fmt: skip
    beating = asyncio.create_task(presence.run())
    try:
        await asyncio.wait_for(flaky.taken.wait(), timeout=30)  # an hour's interval otherwise
    finally:
        beating.cancel()
    assert flaky.calls == 3


async def test_a_malformed_message_keeps_its_slot_busy_without_a_task() -> None:
    storage = memory_storage()
    presence = Presence(storage.registry, worker_id="w", queues=["cpu"], slots=2, interval_s=1)
    from shared.storage.ports import ReceivedMessage

    presence.took(0, ReceivedMessage("m1", "r", "not json", 1))
    presence.took(1, ReceivedMessage("m2", "r", '{"workflow_id": "../x"}', 1))
    assert (presence.record().busy_slots, presence.record().tasks) == (2, [])
    presence.freed(0)
    presence.freed(1)
    assert presence.record().busy_slots == 0


async def test_the_machine_row_is_refreshed_every_few_minutes_and_at_a_clean_stop() -> None:
    from shared.storage.machines import MACHINE_NOTE_EVERY_S

    storage = memory_storage()
    now = [1_000_000.0]
    presence = Presence(
        storage.registry, worker_id="w", queues=["gpu"], slots=1, interval_s=20,
        vm_size="Standard_NC24ads_A100_v4", gpu_count=1, clock=lambda: now[0],
    )  # fmt: skip
    notes: list[float] = []
    noted = storage.registry.note_machine

    async def spy(life: object) -> None:
        notes.append(now[0])
        await noted(life)  # type: ignore[arg-type]

    storage.registry.note_machine = spy  # type: ignore[method-assign]
    for _ in range(40):  # 40 beats of 20 s: the row at the first, then every 300 s
        await presence._note_machine()
        now[0] += 20
    assert notes == [1_000_000.0 + k * MACHINE_NOTE_EVERY_S for k in range(3)]
    await presence.leave()
    [machine] = await storage.registry.machines(0, now[0] + 1)
    assert (machine.last_seen, machine.gpus) == (now[0], 1)  # the stop's note, at once
    assert machine.vm_size == "Standard_NC24ads_A100_v4"
