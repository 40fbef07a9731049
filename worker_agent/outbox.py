"""Group commit of a worker's task events: reports that become ready while the last send to their
partition's event queue is in flight go out together, as one ``EventBatch`` message.

A worker with many slots finishing short tasks would otherwise spend one send (and the
coordinator one delete and a share of a receive) per event. Here an event waits only for the send
in flight on its lane (one lane per partition: a batch goes to one event queue), never for a
timer: a lone event is sent at once, and the slower the queue answers, the more events each send
carries (measured: ``bench/bench_concurrent.py``, docs/capacity.md). A batch holds at most
``MAX_BATCH_EVENTS`` events and ``MAX_BATCH_BYTES``; ``post`` returns once its own
event is sent, or raises its send's error (``shared.group_commit``, one per partition).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from shared.group_commit import GroupCommit
from shared.limits import MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from shared.messages.wrappers import batch_overhead, batch_text

Send = Callable[[int, str, int], Awaitable[None]]
"""Sends one message text to a partition's event queue (partition, text, events in it)."""


class EventOutbox:
    """One worker's events on their way to the event queues, batched per partition."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lanes: dict[int, GroupCommit[str]] = {}
        self.messages = 0
        """Messages sent (an event alone or a batch): with ``events``, the batching achieved."""
        self.events = 0

    async def post(self, text: str, partition: int) -> None:
        """Send ``text`` (an encoded task event) to ``partition``'s event queue, with whatever
        else is waiting for that queue; return once it is sent."""
        lane = self._lanes.get(partition)
        if lane is None:
            lane = self._lanes[partition] = GroupCommit(
                partial(self._write, partition), take=fitting
            )
        await lane.submit(text)

    async def _write(self, partition: int, texts: list[str]) -> None:
        await self._send(partition, batch_text(texts), len(texts))
        self.messages += 1
        self.events += len(texts)


def fitting(texts: Sequence[str]) -> int:
    """How many of the oldest waiting events fit one message (at least one)."""
    size = 0
    for count, text in enumerate(texts):
        size += len(text.encode())
        if count == MAX_BATCH_EVENTS or (
            count and size + batch_overhead(count + 1) > MAX_BATCH_BYTES
        ):
            return count
    return len(texts)
