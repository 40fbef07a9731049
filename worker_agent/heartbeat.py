"""Keep a received task message invisible while its task runs.

Each extension returns a new pop receipt; the latest one is what the final delete (or the release
on shutdown) must use. A stale receipt means the message's visibility ran out and another worker
may hold it now: the heartbeat then stops for good (``lost``), and the caller finishes without
touching the message again.

The visibility asked for may grow with the time the message has been held (``schedule``, from
``cadence.heartbeat_schedule``): a long task's message is extended less often, and if its worker
dies it reappears within the visibility last asked for.

Stopping never cancels an extension in flight: a cancelled request could have changed the receipt
on the service without us learning the new one, which would make the final delete fail and the
attempt run a second time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from shared.storage.ports import Queue, ReceivedMessage

log = logging.getLogger(__name__)

HOLD_MARGIN_S = 1.0
"""Of a message's visibility, what ``held`` does not count on (the receive's own latency, before
the heartbeat existed): this, or a quarter of a shorter grant (``hold_margin_s``)."""


def hold_margin_s(visibility_s: float) -> float:
    """The part of a ``visibility_s`` grant a hold does not count on."""
    return min(HOLD_MARGIN_S, visibility_s / 4)


class Heartbeat:
    """Extends one message's visibility every ``interval_s`` until stopped."""

    def __init__(
        self,
        queue: Queue,
        message: ReceivedMessage,
        *,
        visibility_s: int,
        interval_s: float,
        logger: logging.LoggerAdapter[logging.Logger] | None = None,
        schedule: Callable[[float], tuple[int, float]] | None = None,
    ) -> None:
        """``visibility_s``: the visibility the message was received with. ``schedule(age)``:
        the visibility to ask for and the wait before the next extension once the message has
        been held ``age`` seconds (None: ``visibility_s`` every ``interval_s``)."""
        self.queue = queue
        self.message = message
        """The message with its most recent pop receipt."""
        self.lost = False
        """True once an extension found the receipt stale (another worker may own it)."""
        self._schedule = schedule or (lambda _age: (visibility_s, interval_s))
        self.extensions = 0
        """Extensions made, for tests."""
        self._held_since = time.monotonic()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._log = logger or logging.LoggerAdapter(log, {})
        self._expires = time.monotonic() + visibility_s - hold_margin_s(visibility_s)
        """When the visibility last granted runs out (counted from before the request granting
        it, so never later than the service's)."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"heartbeat {self.message.id}")

    def held(self) -> bool:
        """Whether the message is surely still this worker's: no extension found its receipt
        stale, and the visibility last granted has more than ``hold_margin_s`` of it left. Once
        it ran out, another worker may have received the message (a storage stall can fail every
        extension meanwhile): a task not started by then must not start."""
        return not self.lost and time.monotonic() < self._expires

    async def stop(self) -> ReceivedMessage | None:
        """Stop extending; return the message with its latest receipt, or None if it was lost."""
        self._stop.set()
        if self._task is not None:
            await self._task
        return None if self.lost else self.message

    async def _loop(self) -> None:
        visibility_s, wait = self._schedule(0.0)
        interval_s = wait
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=wait)
                return
            except TimeoutError:
                pass
            asked = time.monotonic()
            visibility_s, interval_s = self._schedule(asked - self._held_since)
            try:
                renewed = await self.queue.extend(self.message, visibility_s)
            except Exception as exc:  # transient: try again sooner, while visibility lasts
                left = self._expires - time.monotonic()
                wait = max(0.5, min(interval_s, left / 3))
                self._log.warning("heartbeat failed (%s); retrying in %.1f s", exc, wait)
                continue
            self.extensions += 1
            if renewed is None:
                self.lost = True
                self._log.warning(
                    "task message visibility was lost (stale pop receipt): another worker may run"
                    " this attempt; finishing without touching the message"
                )
                return
            self.message = renewed
            self._expires = asked + visibility_s - hold_margin_s(visibility_s)
            wait = interval_s
