"""Group commit of a worker's task events: reports that become ready while the last send to their
partition's event queue is in flight go out together, as one ``EventBatch`` message.

A worker with many slots finishing short tasks would otherwise spend one send (and the
coordinator one delete and a share of a receive) per event. Here an event waits only for the send
in flight on its lane (one lane per partition: a batch goes to one event queue), never for a
timer: a lone event is sent at once, and the slower the queue answers, the more events each send
carries (measured: ``bench/bench_concurrent.py``, docs/capacity.md). A batch holds at most
``MAX_BATCH_EVENTS`` events and ``MAX_BATCH_BYTES``; ``post`` returns once its own
event is sent, or raises its send's error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from shared.limits import MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from shared.messages.wrappers import batch_overhead, batch_text

Send = Callable[[int, str, int], Awaitable[None]]
"""Sends one message text to a partition's event queue (partition, text, events in it)."""


@dataclass
class _Lane:
    pending: list[tuple[str, asyncio.Future[None]]] = field(default_factory=list)
    sending: asyncio.Task[None] | None = None


class EventOutbox:
    """One worker's events on their way to the event queues, batched per partition."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lanes: dict[int, _Lane] = {}
        self.messages = 0
        """Messages sent (an event alone or a batch): with ``events``, the batching achieved."""
        self.events = 0

    async def post(self, text: str, partition: int) -> None:
        """Send ``text`` (an encoded task event) to ``partition``'s event queue, with whatever
        else is waiting for that queue; return once it is sent."""
        lane = self._lanes.setdefault(partition, _Lane())
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        item = (text, done)
        lane.pending.append(item)
        if lane.sending is None:
            lane.sending = asyncio.create_task(self._drain(partition, lane))
        try:
            await done
        except asyncio.CancelledError:
            if item in lane.pending:  # not taken yet: it is never sent
                lane.pending.remove(item)
            raise

    async def _drain(self, partition: int, lane: _Lane) -> None:
        try:
            while lane.pending:
                batch = _take(lane.pending)
                texts = [text for text, _ in batch]
                try:
                    await self._send(partition, batch_text(texts), len(texts))
                except asyncio.CancelledError:
                    _settle(batch, asyncio.CancelledError())
                    raise
                except BaseException as exc:  # each post it carried raises it, where it is handled
                    _settle(batch, exc)
                    continue
                self.messages += 1
                self.events += len(texts)
                _settle(batch, None)
        finally:
            lane.sending = None
            _settle(lane.pending, asyncio.CancelledError())  # only left if this task was cancelled


def _take(
    pending: list[tuple[str, asyncio.Future[None]]],
) -> list[tuple[str, asyncio.Future[None]]]:
    """The oldest waiting events that fit one message (at least one), removed from ``pending``."""
    size = 0
    count = 0
    for text, _ in pending:
        grown = size + len(text.encode())
        if count and (
            count == MAX_BATCH_EVENTS or grown + batch_overhead(count + 1) > MAX_BATCH_BYTES
        ):
            break
        size = grown
        count += 1
    taken = pending[:count]
    del pending[:count]
    return taken


def _settle(batch: list[tuple[str, asyncio.Future[None]]], error: BaseException | None) -> None:
    for _, done in batch:
        if done.done():
            continue
        if error is None:
            done.set_result(None)
        elif isinstance(error, asyncio.CancelledError):
            done.cancel()
        else:
            done.set_exception(error)
