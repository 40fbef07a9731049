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
  Lost dispatches: the task queues of running workflows are counted first; a queued attempt on a
  queue holding no message at all is re-sent ``empty_queue_repair_after_s`` after its send (the
  signal ``dagq doctor`` shows) plus the age of the event queue's oldest visible event (a report
  waiting in that backlog is why a state still says queued), any other after
  ``lost_dispatch_after_s``.
- notify-poison (partition 0): notifications the Functions host moved to
  ``{prefix}-notify-poison`` are dead-lettered with the reason (``coordinator.notify_poison``).
- the sweep's mark: when it ran, in the registry (``dagq doctor`` reports overdue sweeps).
- index-repair: a row that disagrees with its state (a projection that failed) is rewritten; a row
  of an earlier workflow of the id (its creation time is not the state's: purged, and a stalled
  write put its row back) is deleted. Active rows every sweep; terminal rows one page per sweep
  (``shared.coordinator.terminal_rows``: a terminal row whose state runs again hides it from every
  other sweep).

A coordinator sweeps the workflows of its own partition only (``IndexRow.partition``), and its own
partition's poison queue.

Due retries need no sweep: a retry is dispatched at once as a delayed send (the engine's
``Dispatch.delay_s`` becomes the message's initial invisibility).
"""

from __future__ import annotations

import asyncio
import logging

from shared.coordinator.dispatch import SentKey
from shared.coordinator.envelope import Envelope
from shared.coordinator.intake import Receiver, take_in
from shared.coordinator.notify_poison import dead_letter_poisoned
from shared.coordinator.stats import PassStats
from shared.coordinator.update import WorkflowUpdater
from shared.messages import ActivateEvent, CancelEvent, Event
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.ports import IndexRow

log = logging.getLogger("dagq.coordinator")

MAX_POISON_CYCLES = 10
"""Poison-queue receive cycles per sweep (the rest waits for the next sweep)."""


async def run_sweeps(updater: WorkflowUpdater, receiver: Receiver, stats: PassStats) -> None:
    """Every sweep, once."""
    sent: set[SentKey] = set()
    await poison_repair(updater, receiver, stats, sent)
    partition = updater.storage.partition
    if partition == 0 and updater.notifier is not None:
        await dead_letter_poisoned(
            updater.notifier.poison,
            updater.storage.deadletters,
            updater.clock,
            stats,
            updater.options.event_visibility_s,
        )
    rows = await updater.storage.index.active(partition)
    rows += await updater.terminal_rows.disagreeing(updater.storage)
    now = updater.clock()
    slots = asyncio.Semaphore(updater.options.workflow_concurrency)
    running = (row for row in rows if row.status is WorkflowStatus.RUNNING)
    await updater.note_empty_queues(queue for row in running for queue in row.queues)

    async def one(row: IndexRow) -> None:
        events: list[Event] = []
        cancelling = row.status.is_terminal or row.status is WorkflowStatus.CANCELLING
        if row.cancel_requested and not cancelling:
            events.append(
                CancelEvent(workflow_id=row.workflow_id, reason="cancel requested (cancel-poll)")
            )
            stats.bump_sweep("cancel_poll")
        if row.status is WorkflowStatus.PENDING:
            if now - row.created_at < updater.options.activate_repair_after_s:
                return  # its activate event is most likely still on its way
            events.append(ActivateEvent(workflow_id=row.workflow_id))
            stats.bump_sweep("activate_repair")
        async with slots:
            result = await updater.update(
                row.workflow_id, [_synthetic(e) for e in events], stats, sent, sweep=True,
                created_at=row.created_at,
            )  # fmt: skip
        stats.bump_sweep("engine")
        if result.row is not None and result.row.created_at != row.created_at:
            # The row of a workflow no longer stored (purged; its id submitted again): a stalled
            # write put it back beside its successor's (seed 892). The successor's own row is
            # its submit's and its coordinator's to write.
            await updater.storage.index.delete(row.workflow_id, row.created_at)
            stats.bump_sweep("index_repair")
        elif result.row is not None and _differs(result.row, row):
            await updater.projector.write(result.row, stats)
            stats.bump_sweep("index_repair")

    await asyncio.gather(*(one(row) for row in rows))
    updater.empty_queues = frozenset()
    updater.event_backlog_s = 0.0
    await _mark(updater, now)


async def _mark(updater: WorkflowUpdater, now: float) -> None:
    """Record that this partition's sweeps ran (``dagq doctor`` reports overdue sweeps)."""
    try:
        await updater.storage.workflows.mark_job(
            ResourceNames.sweep_mark(updater.storage.partition), now
        )
    except Exception as exc:  # advisory: the sweeps themselves did their work
        log.warning("could not record the sweep's run: %r", exc)


async def poison_repair(
    updater: WorkflowUpdater, receiver: Receiver, stats: PassStats, sent: set[SentKey]
) -> None:
    """Re-apply (or dead-letter) events from the event poison queue, then delete them."""
    queue = updater.storage.event_poison_queue
    for _ in range(MAX_POISON_CYCLES):
        envelopes = await receiver.receive(queue, stats)
        if not envelopes:
            return
        stats.bump_sweep("poison", len(envelopes))
        done = await take_in(envelopes, updater, stats, sent)
        await updater.acks.ack(done)


def _synthetic(event: Event) -> Envelope:
    """A sweep-made event (nothing to acknowledge)."""
    return Envelope(
        text=event.model_dump_json(), message_id=f"sweep:{event.kind}", dequeue_count=0, event=event
    )


def _differs(current: IndexRow, stored: IndexRow) -> bool:
    return (
        current.status != stored.status
        or current.counts != stored.counts
        or current.run != stored.run
        or current.error != stored.error
        or current.finished_at != stored.finished_at
        or current.partition != stored.partition
    )
