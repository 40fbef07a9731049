"""One pass: take the lease, drain the event queue, run the sweeps if asked, write pending index
rows, give the lease back (unless held between passes). One structured stats record per pass.

The drain is pipelined: the next receive is in flight while a cycle is updated and flushed, and
the deletes of flushed cycles run in the background (one shared bound), so the queue is never
idle waiting for the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from shared.coordinator.dispatch import SentKey
from shared.coordinator.envelope import Envelope
from shared.coordinator.intake import Receiver, take_in
from shared.coordinator.stats import LeaseState, PassStats
from shared.coordinator.sweeps import run_sweeps
from shared.coordinator.update import WorkflowUpdater
from shared.storage.ports import Storage
from shared.storage.tolerated import TOLERATED

log = logging.getLogger("dagq.coordinator")

AfterSweeps = Callable[[Storage, float], Awaitable[int]]
"""A job run after partition 0's sweeps, under the lease, with the coordinator's storage and the
time by its clock; it returns how many things it did (the schedules' sweep, ``shared.api``)."""


@dataclass
class PassResult:
    """What a pass did; ``stats`` is also logged as the pass's one structured record."""

    stats: PassStats
    trigger_applied: bool | None = None
    """For ``handle_trigger_message``: whether the trigger event was applied (or dead-lettered, or
    found orphaned) — i.e. whether the host may delete it."""
    trigger_requeued: bool = False
    """The trigger event could not be applied here and was re-sent to the event queue."""

    @property
    def leader(self) -> bool:
        """Whether this coordinator held the lease (False: the pass touched nothing)."""
        return self.stats.lease is not LeaseState.NOT_LEADER


class PassRunner:
    """Runs the passes of one coordinator, one at a time."""

    def __init__(
        self,
        updater: WorkflowUpdater,
        receiver: Receiver,
        hold_lease: bool,
        after_sweeps: AfterSweeps | None = None,
    ) -> None:
        self.updater = updater
        self.after_sweeps = after_sweeps
        self.receiver = receiver
        self.hold_lease = hold_lease
        self.lock = asyncio.Lock()
        """Held while a pass runs (and by whatever must not overlap one, e.g. the lease keeper)."""
        self.last_sweep = float("-inf")
        """``time.monotonic()`` of the last sweeps this coordinator ran."""

    def sweep_due(self) -> bool:
        """Whether this coordinator's sweeps are overdue (``sweep_overdue_s``)."""
        return time.monotonic() - self.last_sweep >= self.updater.options.sweep_overdue_s

    async def run(
        self, budget_s: float | None, *, sweep: bool, trigger: Sequence[Envelope] = ()
    ) -> PassResult:
        """One pass (``trigger``: the events of a message handed over by the Functions host,
        applied first)."""
        leadership = self.updater.leadership
        async with self.lock:
            started = time.monotonic()
            stats = PassStats(partition=self.updater.storage.partition)
            result = PassResult(stats)
            if not await leadership.take():
                stats.lease = LeaseState.NOT_LEADER
                result.trigger_applied = False if trigger else None
                stats.latency_s = time.monotonic() - started
                log.debug("not the leader: %s", stats.record())
                return result
            renewer = asyncio.create_task(leadership.renew_while_working())
            try:
                await self._work(started, budget_s, sweep, result, trigger)
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
                await self._end_lease(stats)
            stats.latency_s = time.monotonic() - started
            stats.tolerated = TOLERATED.take()
            if stats.tolerated:
                await TOLERATED.publish(self.updater.storage.registry, "app")
            if (
                stats.events_received
                or stats.sweep
                or stats.tolerated
                or stats.lease is not LeaseState.HELD
            ):
                stats.log()
            else:
                log.debug("idle pass: %s", stats.record())
            return result

    async def _work(
        self,
        started: float,
        budget_s: float | None,
        sweep: bool,
        result: PassResult,
        trigger: Sequence[Envelope],
    ) -> None:
        opts = self.updater.options
        ok = self.updater.leadership.ok
        # Events received late in the pass must still be flushed and deleted before their
        # visibility runs out, or they are redelivered while we hold them.
        budget = min(budget_s or opts.pass_budget_s, opts.event_visibility_s / 2)
        await self._drain(started + budget, result, trigger)
        if sweep and ok():
            self.last_sweep = time.monotonic()
            await run_sweeps(self.updater, self.receiver, result.stats)
            if ok():
                await self._after_sweeps(result.stats)
        if ok():  # a lease kept for the next pass: that pass (or the release) writes the rest
            await self.updater.projector.flush(result.stats, due_only=self.hold_lease)

    async def _after_sweeps(self, stats: PassStats) -> None:
        """The job run after partition 0's sweeps (advisory: its failure fails no pass)."""
        if self.after_sweeps is None or self.updater.storage.partition != 0:
            return
        try:
            done = await self.after_sweeps(self.updater.storage, self.updater.clock())
        except Exception as exc:
            log.warning("the job after the sweeps failed: %r", exc)
            return
        if done:
            stats.bump_sweep("schedules", done)

    async def _end_lease(self, stats: PassStats) -> None:
        leadership = self.updater.leadership
        if not leadership.ok():
            stats.lease = LeaseState.LOST
            self.updater.cache.clear()
            leadership.drop()
        elif not self.hold_lease:
            await leadership.release()

    async def _drain(
        self, deadline: float, result: PassResult, trigger: Sequence[Envelope]
    ) -> None:
        """Receive -> update -> ack, cycle after cycle, until the queue is empty or the deadline
        has passed (the cycle in hand is always finished).

        Receives run ahead of the cycles: one while a cycle is updated, and on a deep queue (the
        last cycle took a full fan-out of batches) ``prefetch_cycles`` of them, every one already
        back joining the next cycle. So a cycle slowed by storage latency takes in more events,
        and its one flush per workflow covers them all. Every receive started is waited for and
        its events updated in this pass (none is left to come back after its visibility). A
        trigger event is updated at once, while the first receive is in flight: a hop through the
        Functions trigger does not wait for a round trip that brings it nothing."""
        stats = result.stats
        updater = self.updater
        opts = updater.options
        sent: set[SentKey] = set()
        acks: list[asyncio.Task[None]] = []
        updater.acks.new_pass()
        queue = updater.storage.event_queue
        first = list(trigger)
        stats.messages_received += 1 if trigger else 0
        waiting = {id(env) for env in trigger}  # the trigger's events not handled yet
        stats.events_received += len(first)
        deep = opts.batch_size * opts.receives_per_cycle
        ahead: deque[asyncio.Task[list[Envelope]]] = deque(
            [asyncio.create_task(self.receiver.receive(queue, stats))]
        )
        try:
            while ahead:
                if first:  # the trigger's cycle does not wait for the first receive
                    envelopes, first = first, []
                else:
                    envelopes = await ahead.popleft()
                    while ahead and ahead[0].done():  # received while the last cycle ran
                        envelopes += await ahead.popleft()
                if not updater.leadership.ok():
                    break
                if envelopes and time.monotonic() < deadline:
                    depth = opts.prefetch_cycles if len(envelopes) >= deep else 1
                    while len(ahead) < depth:
                        ahead.append(asyncio.create_task(self.receiver.receive(queue, stats)))
                if not envelopes:
                    continue
                done = await take_in(envelopes, updater, stats, sent)
                await updater.projector.flush(stats, due_only=True)  # the cycle's rows, batched
                if trigger and result.trigger_applied is None:
                    waiting -= {id(env) for env in done}
                    result.trigger_applied = not waiting
                acks.append(asyncio.create_task(updater.acks.ack(done)))
        finally:
            for receiving in ahead:  # only after a failure: the events come back on their own
                with contextlib.suppress(Exception):
                    await receiving
            await asyncio.gather(*acks, return_exceptions=True)
            if trigger and result.trigger_applied is None:
                result.trigger_applied = False
