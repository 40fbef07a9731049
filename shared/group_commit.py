"""Group commit: items submitted while a write is in flight are written together by the next one.

No timer: a lone item is written at once; the items that arrive while a write is in flight queue
up, and the next write takes the oldest of them that fit (``take``), so the slower the writes,
the more each carries. ``submit`` returns once ITS item is written, or raises its own error: a
write that raises fails every item it carried; a write may instead answer item by item (a list of
None or the error of each). A submit cancelled before its item was taken is never written.
Used by the worker's events (``worker_agent.outbox``) and the submits' index rows
(``shared.api.index_rows``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
Answers = Sequence[BaseException | None] | None
"""A write's answer: None when every item was written, else each item's error (or None)."""

_STOPPING = (asyncio.CancelledError, KeyboardInterrupt, SystemExit)
"""What stops the writer itself (after its items are answered); any other error is theirs."""


class GroupCommit(Generic[T]):
    """The items waiting to be written by one writer, on one event loop."""

    def __init__(
        self,
        write: Callable[[list[T]], Awaitable[Answers]],
        *,
        take: Callable[[Sequence[T]], int] = len,
        max_waiting: int | None = None,
    ) -> None:
        self._write = write
        self._take = take
        """How many of the oldest waiting items the next write carries (at least one is)."""
        self._room = None if max_waiting is None else asyncio.Semaphore(max_waiting)
        self._waiting: list[tuple[T, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> None:
        """Write ``item`` with whatever else waits; return once it is written."""
        if self._room is None:
            return await self._submit(item)
        async with self._room:
            return await self._submit(item)

    async def _submit(self, item: T) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._waiting.append((item, done))
        if self._writer is None:
            self._writer = loop.create_task(self._write_waiting())
        await done  # cancelled: its entry is dropped unless a write took it

    async def _write_waiting(self) -> None:
        try:
            while batch := self._next_batch():
                try:
                    answers = await self._write([item for item, _ in batch])
                except BaseException as exc:
                    _answer(batch, [exc] * len(batch))
                    if isinstance(exc, _STOPPING):
                        raise
                    continue
                _answer(batch, answers or [None] * len(batch))
        finally:
            self._writer = None
            _answer(self._waiting, [asyncio.CancelledError()] * len(self._waiting))
            self._waiting.clear()  # only left if the writer itself was stopped

    def _next_batch(self) -> list[tuple[T, asyncio.Future[None]]]:
        self._waiting = [entry for entry in self._waiting if not entry[1].done()]
        if not self._waiting:
            return []
        count = max(1, min(self._take([item for item, _ in self._waiting]), len(self._waiting)))
        batch, self._waiting = self._waiting[:count], self._waiting[count:]
        return batch


def _answer(
    batch: Sequence[tuple[object, asyncio.Future[None]]], answers: Sequence[BaseException | None]
) -> None:
    """Give each submit its answer (unless it was cancelled meanwhile)."""
    for (_, done), error in zip(batch, answers, strict=True):
        if done.done():
            continue
        if isinstance(error, asyncio.CancelledError):
            done.cancel()
        elif error is not None:
            done.set_exception(error)
        else:
            done.set_result(None)
