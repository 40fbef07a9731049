"""The coordinator's entry points: one pass, the sweeps, the Functions trigger, the long-lived loop.

A ``Coordinator`` wires the parts of one deployment's coordinator together — the lease
(``leadership.py``), intake (``intake.py``), the workflow update (``update.py``, with
``apply.py`` and ``cas.py``), acknowledgement and dead letters (``acks.py``), the index
write-behind (``projector.py``) — and runs passes (``passes.py``) when asked. See
docs/coordinator.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from shared.coordinator.acks import Acknowledger
from shared.coordinator.dispatch import Dispatcher
from shared.coordinator.envelope import Envelope
from shared.coordinator.intake import Receiver
from shared.coordinator.keeper import LeaseKeeper
from shared.coordinator.leadership import Leadership
from shared.coordinator.notices import Notifier
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.passes import AfterSweeps, PassResult, PassRunner
from shared.coordinator.projector import Projector
from shared.coordinator.state_cache import WorkflowCache
from shared.coordinator.stats import LeaseState, PassStats
from shared.coordinator.update import WorkflowUpdater
from shared.errors import LeaseError
from shared.messages.wrappers import wrap_redelivery
from shared.names import ResourceNames
from shared.settings import Settings
from shared.signing import signer_of
from shared.storage.ports import Storage

log = logging.getLogger("dagq.coordinator")

Clock = Callable[[], float]


class Coordinator:
    """The coordinator of one deployment (one prefix). Not shared between event loops.

    ``storage`` is a partition view (``Storage.for_partition``): the coordinator serves that
    partition's event queue under that partition's lease.

    ``hold_lease``: keep the lease between passes (the long-lived process) instead of releasing
    it at the end of each pass. ``keep_lease`` (Functions instances): keep it while passes keep
    coming and give it up after ``keep_lease_idle_s`` without one (``keeper.py``); a trigger then
    waits up to ``lease_wait_s`` for a lease held elsewhere before bouncing its event, and the
    holder runs its overdue sweeps.
    """

    def __init__(
        self,
        storage: Storage,
        config: Settings | ResourceNames,
        options: CoordinatorOptions | None = None,
        *,
        clock: Clock = time.time,
        hold_lease: bool = False,
        keep_lease: bool = False,
        after_sweeps: AfterSweeps | None = None,
    ) -> None:
        """``config``: the deployment's Settings (options then default from them) or just its
        ResourceNames (options default to the Settings defaults). ``after_sweeps``: a job run
        after partition 0's sweeps, under its lease (the Functions app's schedules)."""
        self.storage = storage
        if isinstance(config, Settings):
            self.names = config.names
            self.options = options or CoordinatorOptions.from_settings(config)
        else:
            self.names = config
            self.options = options or CoordinatorOptions()
        self.clock = clock
        opts = self.options
        cache = WorkflowCache(opts.state_cache_mb * 1024 * 1024)
        updater = WorkflowUpdater(
            storage,
            opts,
            cache,
            Dispatcher(storage, self.names, opts.send_concurrency, signer_of(opts.signing_key)),
            Leadership(storage.lease, opts, on_lost=cache.clear),
            Projector(storage.index, opts.project_every_s),
            Acknowledger(storage.deadletters, clock, opts),
            clock,
            Notifier(storage, self.names, signer_of(opts.signing_key)),
        )
        updater.leadership.before_release = lambda: updater.projector.flush(
            PassStats(partition=storage.partition)
        )
        self._passes = PassRunner(updater, Receiver(opts), hold_lease or keep_lease, after_sweeps)
        self._keeper = LeaseKeeper(self._passes, opts.keep_lease_idle_s) if keep_lease else None
        self.leadership = updater.leadership
        self.triggers = 0
        """Trigger messages handed to ``handle_trigger_message``."""
        self.bounces = 0
        """Of those, how many were handed back to the event queue (not applied here)."""

    async def run_once(self, budget_s: float | None = None, *, sweep: bool = False) -> PassResult:
        """One pass: drain the event queue until it is empty or ``budget_s`` is used, then (with
        ``sweep``) run the sweeps. Returns without touching anything if another coordinator holds
        the lease (``result.leader`` is False); never raises for a bad event."""
        return self._kept(await self._passes.run(budget_s, sweep=sweep, trigger=()))

    async def run_sweeps(self, budget_s: float | None = None) -> PassResult:
        """The timer trigger's entry: a drain (backstop for the queue trigger) plus every sweep.
        With ``keep_lease`` a lease taken only for the sweeps is given back at once: the timer
        alone does not make an instance the partition's holder."""
        held_before = self.leadership.held
        result = await self._passes.run(budget_s, sweep=True, trigger=())
        if self._keeper is not None and not held_before:
            async with self._passes.lock:
                await self.leadership.release()
        return result

    def _kept(self, result: PassResult) -> PassResult:
        """With ``keep_lease``: a pass that ended holding the lease keeps it for an idle period."""
        if self._keeper is not None and self.leadership.held:
            self._keeper.touch()
        return result

    async def handle_trigger_message(
        self, text: str, message_id: str, dequeue_count: int = 1, budget_s: float | None = None
    ) -> PassResult:
        """The Functions queue trigger's entry: apply the event the host handed over together with
        a drain of whatever else is queued.

        The host deletes the trigger message when this returns, so on return it has either been
        applied and flushed (or dead-lettered, or acknowledged as an orphan), or re-sent to the
        event queue when this instance could not apply it (another instance holds the lease, the
        lease was lost, a send or flush failed) — never lost and never pushed toward the poison
        queue for that. Only if even the re-send fails does this raise, so the host retries.
        """
        trigger = Envelope.trigger(text, message_id, dequeue_count)
        self.triggers += 1
        result = await self._trigger_pass(trigger, budget_s)
        if not result.trigger_applied:
            self.bounces += 1
            await self._hand_back(trigger, result)
        return result

    async def _hand_back(self, trigger: list[Envelope], result: PassResult) -> None:
        """Re-send a trigger event this instance could not apply, with its delivery count (so an
        event that keeps failing still reaches its dead-letter bound); a delivery spent without
        the lease is not the event's doing and does not count."""
        held = result.stats.lease is LeaseState.HELD
        first = trigger[0]  # every event of the message has its delivery count and text
        deliveries = first.dequeue_count if held else first.dequeue_count - 1
        # A premature event waits for its rerun's retry event, which may be invisible for up to a
        # visibility timeout; anything else is retried soon.
        # A batch goes back whole: its events handled here change nothing when applied again.
        delay = self.options.event_visibility_s if any(e.deferred for e in trigger) else None
        text = first.message_text
        await self.storage.event_queue.send(
            wrap_redelivery(text, deliveries) if deliveries > 0 else text,
            delay_s=delay or self.options.requeue_delay_s,
        )
        result.trigger_requeued = True

    async def _trigger_pass(self, trigger: list[Envelope], budget_s: float | None) -> PassResult:
        """A pass with the trigger event; with ``keep_lease``, wait for a lease held elsewhere up
        to ``lease_wait_s`` first, and keep the lease afterwards."""
        keeper = self._keeper
        deadline = time.monotonic() + (self.options.lease_wait_s if keeper else 0.0)
        while True:
            sweep = keeper is not None and self._passes.sweep_due()
            try:
                result = await self._passes.run(budget_s, sweep=sweep, trigger=trigger)
            except Exception as exc:  # e.g. the lease blob unreachable: hand the event back
                log.warning("pass for trigger message %s failed: %r", trigger[0].message_id, exc)
                return PassResult(PassStats(lease=LeaseState.LOST), trigger_applied=False)
            if result.stats.lease is not LeaseState.NOT_LEADER or time.monotonic() >= deadline:
                break
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
        return self._kept(result)

    async def close(self) -> None:
        """Give the lease up now (the end of a Functions instance or of a test)."""
        if self._keeper is not None:
            await self._keeper.close()
        else:
            await self.release_lease()

    async def run_forever(
        self,
        stop: asyncio.Event,
        *,
        wait_for_lease: bool = False,
        sweep_every_s: float = 5.0,
        idle_min_s: float = 0.02,
        idle_max_s: float = 0.5,
        standby_s: Callable[[], float] | None = None,
    ) -> None:
        """The long-lived mode: pass after pass until ``stop`` is set, sweeping every
        ``sweep_every_s`` and polling an idle queue with a growing pause (up to ``idle_max_s``).

        Raises LeaseError if another coordinator holds the lease (at start or after a loss),
        unless ``wait_for_lease``, in which case it waits for the lease to become free, trying
        again every ``standby_s()`` seconds (default: the renew interval).
        """
        self._passes.hold_lease = True
        next_sweep = 0.0
        idle = idle_min_s
        try:
            while not stop.is_set():
                sweep = time.monotonic() >= next_sweep
                try:
                    result = await self._passes.run(None, sweep=sweep, trigger=())
                except Exception:  # transient storage trouble: keep the process alive
                    log.exception("coordinator pass failed; retrying shortly")
                    await _sleep_until(stop, idle_max_s)
                    continue
                if result.stats.lease is not LeaseState.HELD:
                    if not wait_for_lease and result.stats.lease is LeaseState.NOT_LEADER:
                        raise self._lease_held()
                    pause = standby_s() if standby_s else self.options.renew_interval_s
                    await _sleep_until(stop, pause)
                    continue
                if sweep:
                    next_sweep = time.monotonic() + sweep_every_s
                if result.stats.events_received:
                    idle = idle_min_s
                else:
                    await _sleep_until(stop, idle)
                    idle = min(idle * 2, idle_max_s)
        finally:
            await self.release_lease()

    async def release_lease(self) -> None:
        """Give the lease up (no error if it was lost)."""
        await self._passes.updater.leadership.release()

    def _lease_held(self) -> LeaseError:
        partition = self.storage.partition
        return LeaseError(
            f"another coordinator holds the lease of partition {partition} of prefix"
            f" {self.names.prefix!r} (blob {self.names.workflows_container}/"
            f"{self.names.lease_blob(partition)}): stop it first, or start this one with"
            " --wait-for-lease"
        )


async def _sleep_until(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


__all__ = ["Coordinator", "Envelope", "PassResult"]
