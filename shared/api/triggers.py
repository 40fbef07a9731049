"""Entry points of the non-HTTP triggers: the event-queue trigger and the sweep timer.

Both delegate to the coordinator (``shared.coordinator``) on the app's shared storage. The
coordinator is created on first use and kept for the life of the worker process, so its caches
(compiled definitions, states with ETags) survive from one invocation to the next.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from shared.api.context import CONTEXT

if TYPE_CHECKING:
    import azure.functions as func

    from shared.coordinator import Coordinator

log = logging.getLogger("dagq.triggers")

_coordinator: Coordinator | None = None
_lock: asyncio.Lock | None = None


async def coordinator() -> Coordinator:
    """The process's coordinator, created on first use."""
    global _coordinator, _lock
    if _coordinator is not None:
        return _coordinator
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        if _coordinator is None:
            from shared.coordinator import Coordinator

            storage = await CONTEXT.storage()
            # Released after each pass (hold_lease False): another instance may take over.
            _coordinator = Coordinator(storage, CONTEXT.settings)
        coord = _coordinator
    return coord


def _message_text(msg: func.QueueMessage) -> str:
    # host.json sets messageEncoding "none": the body is dagq's JSON exactly as it was sent.
    return msg.get_body().decode("utf-8", errors="replace")


async def on_event(msg: func.QueueMessage) -> None:
    """One event from the event queue: apply it (with a drain of more events) under the lease.

    Returning normally lets the host delete the message; raising makes it retry after the
    visibilityTimeout, up to maxDequeueCount, then moves it to the poison queue (which the sweep
    re-applies).
    """
    coord = await coordinator()
    await coord.handle_trigger_message(
        _message_text(msg), message_id=msg.id or "", dequeue_count=msg.dequeue_count or 1
    )


async def on_sweep(timer: func.TimerRequest) -> None:
    """The periodic sweeps, and a drain of the event queue as a backstop."""
    if timer.past_due:
        log.info("sweep timer is past due; running now")
    coord = await coordinator()
    await coord.run_sweeps()
