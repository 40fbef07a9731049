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

The batching is ``shared.group_commit``'s. One batcher per event loop and index (``batcher``):
Functions may run invocations on more than one loop, and asyncio objects never cross loops. At
most ``MAX_WAITING`` rows wait; a submit beyond that waits for room before it queues its row.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from shared.errors import ConflictError
from shared.group_commit import Answers, GroupCommit
from shared.limits import INDEX_BATCH
from shared.names import index_row_key

if TYPE_CHECKING:
    from shared.storage.ports import Index, IndexRow

MAX_WAITING = 1_000
"""Rows that may wait for a batch in one process (ten full batches); more submits wait."""


class RowBatcher:
    """The index rows waiting to be created on one index, from one event loop."""

    def __init__(
        self, index: Index, *, max_rows: int = INDEX_BATCH, max_waiting: int = MAX_WAITING
    ) -> None:
        self._index = weakref.ref(index)
        self._max_rows = max_rows
        self._commit = GroupCommit(self._write, take=self._take, max_waiting=max_waiting)

    async def create(self, row: IndexRow) -> None:
        """Create ``row`` (``Index.create``'s answer: an existing row is left), in a batch with
        the rows other submits create meanwhile."""
        await self._commit.submit(row)

    def _take(self, rows: Sequence[IndexRow]) -> int:
        """The rows waiting longest, up to ``max_rows`` and up to the first row of a key already
        taken (a batch holds one row per key; the second waits for the next batch)."""
        keys: set[str] = set()
        for count, row in enumerate(rows[: self._max_rows]):
            key = index_row_key(row.workflow_id, row.created_at)
            if key in keys:
                return count
            keys.add(key)
        return min(len(rows), self._max_rows)

    async def _write(self, rows: list[IndexRow]) -> Answers:
        """Write one batch; on a conflict, each row alone, with its own answer."""
        index = self._index()
        if index is None:  # pragma: no cover - a waiting submit holds its storage
            raise RuntimeError("the index was closed with rows waiting")
        try:
            if len(rows) == 1:
                await index.create(rows[0])
            else:
                await index.create_many(rows)
        except ConflictError:  # a row exists: each row alone, as its submit would write it
            return await asyncio.gather(*(_alone(index, row) for row in rows))
        return None


async def _alone(index: Index, row: IndexRow) -> BaseException | None:
    """``row`` created on its own: None, or the error its submit gets."""
    try:
        await index.create(row)
    except Exception as exc:
        return exc
    return None


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
