"""Post task events and upload attempt files, retrying transient storage errors until they succeed.

A finished attempt's result must reach the coordinator: the task message is deleted only after its
event was sent, so giving up would leave the attempt to be run again by another worker. Retries
back off exponentially (with jitter) up to ``max_delay_s``. dagq's own errors (``DagqError``: a
message over budget, a missing blob) are not transient and are raised at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from shared.errors import DagqError
from shared.messages import TaskEvent, encode
from shared.storage.ports import OutputBlobs, Queue
from worker_agent.outbox import EventOutbox

log = logging.getLogger(__name__)
T = TypeVar("T")


async def retry_transient(
    what: str,
    operation: Callable[[], Awaitable[T]],
    *,
    first_delay_s: float = 0.2,
    max_delay_s: float = 30.0,
    logger: logging.LoggerAdapter[logging.Logger] | None = None,
) -> T:
    """Run ``operation`` until it succeeds; retry anything but a DagqError with backoff."""
    delay = first_delay_s
    attempt = 1
    while True:
        try:
            return await operation()
        except DagqError:
            raise
        except Exception as exc:
            (logger or log).warning(
                "%s failed (try %d: %s: %s); retrying in %.1f s",
                what,
                attempt,
                type(exc).__name__,
                exc,
                delay,
            )
        await asyncio.sleep(delay * random.uniform(0.8, 1.2))  # noqa: S311 - jitter, not crypto
        delay = min(delay * 2, max_delay_s)
        attempt += 1


class Reporter:
    """Sends one worker's events to the event queues and its files to the outputs container.

    ``event_queue`` maps a partition number (from the task message) to that partition's event
    queue, where the workflow's coordinator listens. Events to one queue that are ready together
    travel as one message (``worker_agent.outbox``).
    """

    def __init__(self, event_queue: Callable[[int], Queue], outputs: OutputBlobs) -> None:
        self.event_queue = event_queue
        self.outputs = outputs
        self.outbox = EventOutbox(self._send)

    async def _send(self, partition: int, text: str, events: int) -> None:
        queue = self.event_queue(partition)
        what = "an event" if events == 1 else f"{events} events"
        await retry_transient(f"posting {what}", lambda: queue.send(text))

    async def post(
        self,
        event: TaskEvent,
        *,
        partition: int = 0,
        logger: logging.LoggerAdapter[logging.Logger] | None = None,
    ) -> None:
        """Send ``event`` to ``partition``'s event queue, retrying until the queue accepts it."""
        text = encode(event)
        try:
            await self.outbox.post(text, partition)
        except DagqError as exc:
            (logger or log).error("could not post the %s event: %s", event.kind, exc)
            raise

    async def upload(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str,
        logger: logging.LoggerAdapter[logging.Logger] | None = None,
    ) -> None:
        """Create or replace blob ``name`` in the outputs container, retrying until it is stored."""
        await retry_transient(
            f"uploading {name}",
            lambda: self.outputs.put(name, data, content_type=content_type),
            logger=logger,
        )
