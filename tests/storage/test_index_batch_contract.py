"""Contract of ``Index.create_many`` (issue 32): the rows of many submits inserted in one batch
transaction, all or nothing, on the memory fake, Azurite and Azurite behind a proxy that loses
connections (a repeated transaction whose first try landed finds its own rows: ConflictError,
which the submits' batcher settles by creating each row alone)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest

from shared.errors import ConflictError
from shared.limits import INDEX_BATCH
from shared.states import WorkflowStatus
from shared.storage.ports import IndexRow, Storage

BASE = IndexRow("m000", "batch", WorkflowStatus.PENDING, 1_800_000_000.0, 1_800_000_000.0)


def rows(prefix: str, count: int, start: int = 0) -> list[IndexRow]:
    return [
        replace(BASE, workflow_id=f"{prefix}{i:03d}", created_at=BASE.created_at + i,
                total=i, counts={"pending": i}, queues=["cpu", f"q{i}"])
        for i in range(start, start + count)
    ]  # fmt: skip


async def stored(storage: Storage, wanted: list[IndexRow]) -> list[IndexRow | None]:
    return [await storage.index.get(r.workflow_id, r.created_at) for r in wanted]


async def test_create_many_inserts_a_full_batch_of_rows(storage: Storage) -> None:
    batch = rows("m", INDEX_BATCH)
    await storage.index.create_many(batch)
    assert await stored(storage, batch) == batch
    page = await storage.index.list(limit=INDEX_BATCH + 1)
    assert sorted(r.workflow_id for r in page.rows) == sorted(r.workflow_id for r in batch)


async def test_a_row_that_exists_fails_the_whole_batch(storage: Storage) -> None:
    """All or nothing: one row there already (a repeated submit's) and no row is written, the
    existing row unchanged; ``create`` of each then writes the others and leaves it."""
    batch = rows("c", 5)
    first = replace(batch[3], name="first")
    await storage.index.create(first)
    with pytest.raises(ConflictError):
        await storage.index.create_many(batch)
    assert await stored(storage, batch) == [None, None, None, first, None]
    for one in batch:
        await storage.index.create(one)
    assert await stored(storage, batch) == [*batch[:3], first, batch[4]]


async def test_a_batch_written_again_finds_its_rows(storage: Storage) -> None:
    """What a repeat of a transaction whose reply was lost meets: its own rows, so a conflict
    and nothing changed (on the lossy proxy some first tries are such repeats already)."""
    batch = rows("r", 30)
    with contextlib.suppress(ConflictError):  # the lossy proxy lost the reply of the first try
        await storage.index.create_many(batch)
    await storage.index.request_cancel(batch[0].workflow_id, batch[0].created_at)
    with pytest.raises(ConflictError):
        await storage.index.create_many(batch)
    got = await stored(storage, batch)
    assert got == [replace(batch[0], cancel_requested=True), *batch[1:]]


async def test_a_batch_refuses_too_many_rows_and_a_key_twice(storage: Storage) -> None:
    with pytest.raises(ValueError, match="at most"):
        await storage.index.create_many(rows("x", INDEX_BATCH + 1))
    twice = rows("y", 2)
    with pytest.raises(ValueError, match="two index rows"):
        await storage.index.create_many([twice[0], twice[1], twice[0]])
    assert await stored(storage, twice) == [None, None]
    await storage.index.create_many([])  # nothing to write
