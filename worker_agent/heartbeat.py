"""Keep a received task message invisible while its task runs.

Each extension returns a new pop receipt; the latest one is what the final delete (or the release
on shutdown) must use. A stale receipt means the message's visibility ran out and another worker
may hold it now: the heartbeat then stops for good (``lost``), and the caller finishes without
touching the message again.

Stopping never cancels an extension in flight: a cancelled request could have changed the receipt
on the service without us learning the new one, which would make the final delete fail and the
attempt run a second time.
"""

from __future__ import annotations

import asyncio
import logging
import time

from shared.storage.ports import Queue, ReceivedMessage

log = logging.getLogger(__name__)


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
    ) -> None:
        self.queue = queue
        self.message = message
        """The message with its most recent pop receipt."""
        self.lost = False
        """True once an extension found the receipt stale (another worker may own it)."""
        self._visibility_s = visibility_s
        self._interval_s = interval_s
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._log = logger or logging.LoggerAdapter(log, {})
        self._expires = time.monotonic() + visibility_s

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"heartbeat {self.message.id}")

    async def stop(self) -> ReceivedMessage | None:
        """Stop extending; return the message with its latest receipt, or None if it was lost."""
        self._stop.set()
        if self._task is not None:
            await self._task
        return None if self.lost else self.message

    async def _loop(self) -> None:
        wait = self._interval_s
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=wait)
                return
            except TimeoutError:
                pass
            try:
                renewed = await self.queue.extend(self.message, self._visibility_s)
            except Exception as exc:  # transient: try again sooner, while visibility lasts
                left = self._expires - time.monotonic()
                wait = max(0.5, min(self._interval_s, left / 3))
                self._log.warning("heartbeat failed (%s); retrying in %.1f s", exc, wait)
                continue
            if renewed is None:
                self.lost = True
                self._log.warning(
                    "task message visibility was lost (stale pop receipt): another worker may run"
                    " this attempt; finishing without touching the message"
                )
                return
            self.message = renewed
            self._expires = time.monotonic() + self._visibility_s
            wait = self._interval_s
