"""Group commit of the index rows submits create: one request for the rows of many submits.

Submits arrive concurrently in one process (the Functions worker runs concurrent async
invocations on one event loop), and every index row is in the index's one partition, so rows
can be inserted together in one batch transaction (``Index.create_many``, up to ``INDEX_BATCH``
rows). ``create_row`` queues a submit's row and returns once THAT row is stored, or raises its
own error. No timer: while a batch is being written, the rows that arrive queue up, and the next
batch takes whatever queued (like a database's group commit), so a lone submit is written at
once, with ``Index.create``, and pays no added latency.

A transaction fails as a whole. When it fails because a row exists (a repeated submit's row, or
the rows of a try whose reply was lost), the batch's rows are written again one by one with
``create``, each as it would be alone; any other failure fails that batch's submits only, each
with the batch's error (what one of them would likely have met alone).

One batcher per event loop and index (``batcher``): Functions may run invocations on more than
one loop, and asyncio objects never cross loops. At most ``MAX_WAITING`` rows wait; a submit
beyond that waits for room before it queues its row.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from typing import TYPE_CHECKING

from shared.errors import ConflictError
from shared.limits import INDEX_BATCH
from shared.names import index_row_key

if TYPE_CHECKING:
    from shared.storage.ports import Index, IndexRow

MAX_WAITING = 1_000
"""Rows that may wait for a batch in one process (ten full batches); more submits wait."""

_Waiting = tuple["IndexRow", "asyncio.Future[None]"]


class RowBatcher:
    """The index rows waiting to be created on one index, from one event loop."""

    def __init__(
        self, index: Index, *, max_rows: int = INDEX_BATCH, max_waiting: int = MAX_WAITING
    ) -> None:
        self._index = weakref.ref(index)
        self._max_rows = max_rows
        self._waiting: deque[_Waiting] = deque()
        self._room = asyncio.Semaphore(max_waiting)
        self._writer: asyncio.Task[None] | None = None

    async def create(self, row: IndexRow) -> None:
        """Create ``row`` (``Index.create``'s answer: an existing row is left), in a batch with
        the rows other submits create meanwhile."""
        async with self._room:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[None] = loop.create_future()
            self._waiting.append((row, done))
            if self._writer is None:
                self._writer = loop.create_task(self._write_waiting())
            await done

    async def _write_waiting(self) -> None:
        """Write batches of the waiting rows until none waits."""
        try:
            while self._waiting:
                await self._write(self._next_batch())
        finally:
            self._writer = None
            while self._waiting:  # cancelled (the loop closing): nothing writes these now
                self._waiting.popleft()[1].cancel()

    def _next_batch(self) -> list[_Waiting]:
        """The rows waiting longest, up to ``max_rows``, one per row key (a second row of a key
        waits for the next batch); rows whose submit was cancelled are dropped."""
        batch: list[_Waiting] = []
        keys: set[str] = set()
        later: list[_Waiting] = []
        while self._waiting and len(batch) < self._max_rows:
            row, done = entry = self._waiting.popleft()
            key = index_row_key(row.workflow_id, row.created_at)
            if done.done():
                continue
            if key in keys:
                later.append(entry)
                continue
            keys.add(key)
            batch.append(entry)
        self._waiting.extendleft(reversed(later))
        return batch

    async def _write(self, batch: list[_Waiting]) -> None:
        """Write one batch and answer each of its submits."""
        index = self._index()
        if index is None:  # pragma: no cover - a waiting submit holds its storage
            raise RuntimeError("the index was closed with rows waiting")
        try:
            if len(batch) == 1:
                await index.create(batch[0][0])
            else:
                await index.create_many([row for row, _ in batch])
        except ConflictError:  # a row exists: each row alone, as its submit would write it
            await asyncio.gather(*(_alone(index, row, done) for row, done in batch))
            return
        except BaseException as exc:  # each submit of the batch gets the batch's error
            for _, done in batch:
                _answer(done, exc)
            if isinstance(exc, _STOPPING):
                raise
            return
        for _, done in batch:
            _answer(done, None)


_STOPPING = (asyncio.CancelledError, KeyboardInterrupt, SystemExit)
"""What stops the writer itself (after its submits are answered); any other error is theirs."""


def _answer(done: asyncio.Future[None], error: BaseException | None) -> None:
    """Give a submit its answer (unless it was cancelled meanwhile)."""
    if done.done():
        return
    if isinstance(error, asyncio.CancelledError):
        done.cancel()
    elif error is not None:
        done.set_exception(error)
    else:
        done.set_result(None)


async def _alone(index: Index, row: IndexRow, done: asyncio.Future[None]) -> None:
    """``row`` created on its own, its answer given to its submit."""
    try:
        await index.create(row)
    except BaseException as exc:
        _answer(done, exc)
        if isinstance(exc, _STOPPING):
            raise
        return
    _answer(done, None)


_BATCHERS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, weakref.WeakKeyDictionary[Index, RowBatcher]
] = weakref.WeakKeyDictionary()


def batcher(index: Index) -> RowBatcher:
    """The batcher of ``index`` on the running event loop (made on first use)."""
    loop = asyncio.get_running_loop()
    of_loop = _BATCHERS.get(loop)
    if of_loop is None:
        of_loop = _BATCHERS[loop] = weakref.WeakKeyDictionary()
    found = of_loop.get(index)
    if found is None:
        found = of_loop[index] = RowBatcher(index)
    return found


async def create_row(index: Index, row: IndexRow) -> None:
    """Create a new workflow's index row (``Index.create``) in a batch with the rows other
    submits of this process create meanwhile: returns once this row is stored."""
    await batcher(index).create(row)
