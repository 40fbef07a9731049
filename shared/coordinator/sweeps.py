"""The sweeps: level-triggered repairs run by the timer trigger (and every few seconds by the
long-lived process). Each derives what to do from what is stored, so running one twice is harmless.

- poison-repair: events the Functions host moved to ``{events}-poison`` are processed like fresh
  ones (valid -> applied; malformed -> dead-lettered with the reason) and deleted only afterwards.
- cancel-poll: an active index row with the durable cancel flag whose workflow is not cancelling
  yet gets a CancelEvent (the API's cancel event was lost).
- activate-repair: a workflow still pending ``activate_repair_after_s`` after creation gets an
  ActivateEvent (the API crashed before sending it, or it was lost).
- engine sweep, for every active workflow: running past timeout_s, queued past queue_timeout_s,
  dispatches presumed lost (re-sent with the same attempt), ready tasks with free slots (missed
  releases), cancel grace — all decided by ``shared.engine.sweep`` from the state's own times.
- index-repair: a row that disagrees with its state (a projection that failed) is rewritten.

Due retries need no sweep: a retry is dispatched at once as a delayed send (the engine's
``Dispatch.delay_s`` becomes the message's initial invisibility).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from shared.coordinator.dispatch import SentKey
from shared.coordinator.stats import PassStats
from shared.messages import ActivateEvent, CancelEvent, Event
from shared.states import WorkflowStatus
from shared.storage.ports import IndexRow

if TYPE_CHECKING:
    from shared.coordinator.loop import Coordinator

MAX_POISON_CYCLES = 10
"""Poison-queue receive cycles per sweep (the rest waits for the next sweep)."""


async def run_sweeps(coord: Coordinator, stats: PassStats) -> None:
    """Every sweep, once."""
    sent: set[SentKey] = set()
    await poison_repair(coord, stats, sent)
    rows = await coord.storage.index.active()
    now = coord.clock()
    slots = asyncio.Semaphore(coord.options.workflow_concurrency)

    async def one(row: IndexRow) -> None:
        events: list[Event] = []
        if row.cancel_requested and row.status is not WorkflowStatus.CANCELLING:
            events.append(
                CancelEvent(workflow_id=row.workflow_id, reason="cancel requested (cancel-poll)")
            )
            stats.bump_sweep("cancel_poll")
        if row.status is WorkflowStatus.PENDING:
            if now - row.created_at < coord.options.activate_repair_after_s:
                return  # its activate event is most likely still on its way
            events.append(ActivateEvent(workflow_id=row.workflow_id))
            stats.bump_sweep("activate_repair")
        async with slots:
            current = await coord.sweep_workflow(row.workflow_id, events, stats, sent)
        stats.bump_sweep("engine")
        if current is not None and _differs(current, row):
            await coord.write_row(current, stats)
            stats.bump_sweep("index_repair")

    await asyncio.gather(*(one(row) for row in rows))


async def poison_repair(coord: Coordinator, stats: PassStats, sent: set[SentKey]) -> None:
    """Re-apply (or dead-letter) events from the event poison queue, then delete them."""
    queue = coord.storage.event_poison_queue
    for _ in range(MAX_POISON_CYCLES):
        envelopes = await coord.receive_from(queue, stats)
        if not envelopes:
            return
        stats.bump_sweep("poison", len(envelopes))
        done = await coord.process_envelopes(envelopes, stats, sent)
        await coord.ack(done, stats)


def _differs(current: IndexRow, stored: IndexRow) -> bool:
    return (
        current.status != stored.status
        or current.counts != stored.counts
        or current.run != stored.run
        or current.error != stored.error
        or current.finished_at != stored.finished_at
    )
