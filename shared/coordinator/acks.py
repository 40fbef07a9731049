"""Acknowledgement and dead letters: deleting handled events, keeping unusable ones aside.

An event is deleted only once it is fully handled (applied and flushed, found orphaned, or stored
as a dead letter with its reason). A failed delete is harmless: the event is redelivered and
re-applying it changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from shared.coordinator.envelope import Envelope
from shared.coordinator.stats import PassStats
from shared.storage.ports import DeadLetters

log = logging.getLogger("dagq.coordinator")


class Acknowledger:
    """Deletes handled events (with bounded concurrency) and stores dead letters."""

    def __init__(
        self, deadletters: DeadLetters, clock: Callable[[], float], delete_concurrency: int
    ) -> None:
        self._deadletters = deadletters
        self._clock = clock
        self._concurrency = delete_concurrency
        self._slots = asyncio.Semaphore(delete_concurrency)

    def new_pass(self) -> None:
        """A fresh delete bound for a pass (a pass may run on another event loop than the last)."""
        self._slots = asyncio.Semaphore(self._concurrency)

    async def ack(self, envelopes: list[Envelope]) -> None:
        """Delete every received envelope (a trigger or sweep envelope has nothing to delete)."""
        slots = self._slots

        async def delete(env: Envelope) -> None:
            assert env.message is not None
            assert env.source is not None
            async with slots:
                try:
                    await env.source.delete(env.message)
                except Exception as exc:  # redelivered later; re-applying it is a no-op
                    log.warning("could not delete event %s: %r", env.message_id, exc)

        await asyncio.gather(*(delete(env) for env in envelopes if env.message is not None))

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
