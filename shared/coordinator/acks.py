"""Acknowledgement and dead letters: deleting handled events, keeping unusable ones aside, and
what becomes of an event that was not simply applied (orphaned, failed, set aside).

An event is deleted only once it is fully handled (applied and flushed, found orphaned, or stored
as a dead letter with its reason), and a batch of events only once all of them are. A failed delete
is harmless: the event is redelivered and re-applying it changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from shared.coordinator.envelope import Envelope, deletable
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.stats import PassStats
from shared.errors import ApplyError
from shared.storage.ports import DeadLetters

log = logging.getLogger("dagq.coordinator")


class Acknowledger:
    """Deletes handled events (with bounded concurrency) and stores dead letters."""

    def __init__(
        self, deadletters: DeadLetters, clock: Callable[[], float], options: CoordinatorOptions
    ) -> None:
        self._deadletters = deadletters
        self._clock = clock
        self._options = options
        self._slots = asyncio.Semaphore(options.delete_concurrency)

    def new_pass(self) -> None:
        """A fresh delete bound for a pass (a pass may run on another event loop than the last)."""
        self._slots = asyncio.Semaphore(self._options.delete_concurrency)

    async def ack(self, envelopes: list[Envelope]) -> None:
        """Delete the message of every handled envelope (a batch's once all its events are
        handled; a trigger or sweep envelope has nothing to delete)."""
        slots = self._slots

        async def delete(env: Envelope) -> None:
            assert env.message is not None
            assert env.source is not None
            async with slots:
                try:
                    await env.source.delete(env.message)
                except Exception as exc:  # redelivered later; re-applying it is a no-op
                    log.warning("could not delete event %s: %r", env.message_id, exc)

        await asyncio.gather(*(delete(env) for env in deletable(envelopes)))

    async def dead_letter(
        self, items: list[tuple[Envelope, str]], stats: PassStats
    ) -> list[Envelope]:
        """Keep each event aside with its reason; return those stored (safe to delete)."""
        if not items:
            return []
        now = self._clock()

        async def put(env: Envelope, reason: str) -> Envelope | None:
            try:
                await self._deadletters.put(
                    message_id=env.message_id, text=env.text, reason=reason, received_at=now
                )
            except Exception as exc:
                log.warning("could not dead-letter event %s: %r", env.message_id, exc)
                return None
            log.warning("dead-lettered event %s: %s", env.message_id, reason)
            return env

        stored = [env for env in await asyncio.gather(*(put(e, r) for e, r in items)) if env]
        stats.dead_lettered += len(stored)
        return stored

    async def failed(
        self, workflow_id: str, envelopes: list[Envelope], exc: ApplyError, stats: PassStats
    ) -> list[Envelope]:
        """Computing the new state from this one event failed (the engine or the codec raised):
        every such failure is a delivery that counts, and at ``max_dequeue_count`` deliveries the
        event is dead-lettered with the error, never retried forever. Returns what may be acked."""
        stats.event_failures += 1
        if not envelopes:  # the engine's sweep alone failed: the next sweep tries again
            log.error("workflow %s: sweep failed: %s", workflow_id, exc)
            return []
        (env,) = envelopes
        bound = self._options.max_dequeue_count
        if env.dequeue_count >= bound:
            reason = f"applying the event failed in {env.dequeue_count} deliveries: {exc}"
            return await self.dead_letter([(env, reason)], stats)
        stats.events_unacked += 1
        log.warning(
            "workflow %s: event %s failed in delivery %d (dead-lettered at %d): %s",
            workflow_id, env.message_id, env.dequeue_count, bound, exc,
        )  # fmt: skip
        return []

    def set_aside(
        self, workflow_id: str, envelopes: list[Envelope], stats: PassStats, doing: str
    ) -> None:
        """The workflow used up its slice of the pass: its (remaining) events wait for a later
        pass, so that one slow workflow never holds up the others."""
        stats.workflows_set_aside += 1
        stats.events_unacked += len(envelopes)
        log.warning(
            "workflow %s: set aside after %.1f s %s (its slice of the pass); %d events left for"
            " a later pass",
            workflow_id, self._options.workflow_slice_s, doing, len(envelopes),
        )  # fmt: skip

    @staticmethod
    def orphans(workflow_id: str, envelopes: list[Envelope], stats: PassStats) -> list[Envelope]:
        """Events for a workflow that does not exist: acknowledged, counted and logged."""
        stats.orphans += len(envelopes)
        for env in envelopes:
            log.warning(
                "event %s (%s) for workflow %s acknowledged as an orphan: the workflow does not"
                " exist (deleted, or never completely submitted)",
                env.message_id, env.event.kind if env.event else "?", workflow_id,
            )  # fmt: skip
        return list(envelopes)
