"""Entry points of the non-HTTP triggers: the event-queue triggers (one per partition) and the
sweep timer. Partition 0's coordinator starts the schedules' due runs after its sweeps
(``start_scheduled_runs``).

Both delegate to the coordinator (``shared.coordinator``) on the app's shared storage. One
coordinator per partition is created on first use and kept for the life of the worker process, so
its caches (compiled definitions, states with ETags) survive from one invocation to the next; it
keeps its partition's lease while invocations keep coming and gives it up after a short idle
period (``CoordinatorOptions.keep_lease_idle_s``), and runs its partition's sweeps when they are
overdue. The timer sweeps every partition whose lease is free (the backstop).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from shared.api.context import CONTEXT

if TYPE_CHECKING:
    import azure.functions as func

    from shared.coordinator import Coordinator
    from shared.storage.ports import Storage

log = logging.getLogger("dagq.triggers")

_coordinators: dict[int, Coordinator] = {}
_lock: asyncio.Lock | None = None


async def coordinator(partition: int = 0) -> Coordinator:
    """The process's coordinator of ``partition``, created on first use."""
    global _lock
    found = _coordinators.get(partition)
    if found is not None:
        return found
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        if partition not in _coordinators:
            from shared.coordinator import Coordinator

            storage = (await CONTEXT.storage()).for_partition(partition)
            _coordinators[partition] = Coordinator(
                storage, CONTEXT.settings, keep_lease=True, after_sweeps=start_scheduled_runs
            )
        return _coordinators[partition]


async def start_scheduled_runs(storage: Storage, now: float) -> int:
    """The schedules' sweep (``shared.api.schedule_sweep``), run after partition 0's sweeps."""
    from shared.api.schedule_sweep import run_schedules
    from shared.signing import signer_of

    settings = CONTEXT.settings
    return await run_schedules(
        storage, now, partitions=settings.partitions, signer=signer_of(settings.signing_key),
        max_expansion_width=settings.max_expansion_width, names=settings.names,
    )  # fmt: skip


def _message_text(msg: func.QueueMessage) -> str:
    # host.json sets messageEncoding "none": the body is dagq's JSON exactly as it was sent.
    return msg.get_body().decode("utf-8", errors="replace")


async def on_event(msg: func.QueueMessage, partition: int = 0) -> None:
    """One event from ``partition``'s event queue: apply it (with a drain of more events) under
    that partition's lease.

    Returning normally lets the host delete the message; raising makes it retry after the
    visibilityTimeout, up to maxDequeueCount, then moves it to the poison queue (which the sweep
    re-applies).
    """
    coord = await coordinator(partition)
    await coord.handle_trigger_message(
        _message_text(msg), message_id=msg.id or "", dequeue_count=msg.dequeue_count or 1
    )


async def on_sweep(timer: func.TimerRequest) -> None:
    """The periodic sweeps of every partition, and a drain of each event queue as a backstop
    (partitions whose lease another instance holds are swept by that instance)."""
    if timer.past_due:
        log.info("sweep timer is past due; running now")
    coords = [await coordinator(p) for p in range(CONTEXT.settings.partitions)]
    await asyncio.gather(*(coord.run_sweeps() for coord in coords))


async def close() -> None:
    """Give up every lease this process holds (the local host calls this at shutdown)."""
    coords = list(_coordinators.values())
    await asyncio.gather(*(coord.close() for coord in coords), return_exceptions=True)
