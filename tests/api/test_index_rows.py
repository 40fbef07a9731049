"""Group commit of the submits' index rows (``shared.api.index_rows``, issue 32): concurrent
submits of one process share batch transactions, a lone one is written at once, and each submit
gets the answer it would get alone (a conflicting row, a failed batch)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.api import service
from shared.api.index_rows import RowBatcher, batcher, create_row
from shared.definition.compiler import compile_text
from shared.errors import ConflictError, IncompleteSubmitError
from shared.names import index_row_key
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from shared.storage.memory.index import MemoryIndex
from shared.storage.ports import IndexRow

BASE = IndexRow("w000", "wf", WorkflowStatus.PENDING, 1_800_000_000.0, 1_800_000_000.0)
NOW = 1_800_000_000.0


def rows(count: int) -> list[IndexRow]:
    return [
        replace(BASE, workflow_id=f"w{i:03d}", created_at=BASE.created_at + i) for i in range(count)
    ]


class RecordingIndex(MemoryIndex):
    """The memory index, recording each request (and what it raised) and yielding to the loop
    ``ticks`` times inside each, as a request in flight would; ``gate`` (set: open) holds every
    request until opened; ``fail_batch`` fails a ``create_many`` with ``OSError`` by its number."""

    def __init__(self, ticks: int = 1) -> None:
        super().__init__()
        self.requests: list[tuple[str, int]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.ticks = ticks
        self.fail_batch: set[int] = set()
        self.writes: Counter[str] = Counter()

    async def _in_flight(self) -> None:
        await self.gate.wait()
        for _ in range(self.ticks):
            await asyncio.sleep(0)

    async def create(self, row: IndexRow) -> None:
        self.requests.append(("create", 1))
        await self._in_flight()
        key = index_row_key(row.workflow_id, row.created_at)
        if key not in self.rows:
            self.writes[key] += 1
        await super().create(row)

    async def create_many(self, batch: list[IndexRow]) -> None:
        self.requests.append(("create_many", len(batch)))
        number = sum(1 for kind, _ in self.requests if kind == "create_many")
        await self._in_flight()
        if number in self.fail_batch:
            raise OSError(f"503 on batch {number}")
        await super().create_many(batch)
        for row in batch:
            self.writes[index_row_key(row.workflow_id, row.created_at)] += 1


async def ticks(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_concurrent_submits_cost_fewer_index_requests_and_each_gets_its_row() -> None:
    index = RecordingIndex()
    storage = dataclasses.replace(memory_storage("rows"), index=index)
    wf = compile_text("name: one\ntasks:\n  - {name: a, kwargs: {cmd: echo}}\n")
    submitted = await asyncio.gather(
        *(service.submit(storage, wf, now=NOW, workflow_id=f"s{i:02d}") for i in range(40))
    )
    assert all(s.created for s in submitted)
    for s in submitted:
        row = await index.get(s.workflow_id, NOW)
        assert row is not None
        assert row.workflow_id == s.workflow_id
    assert len(index.rows) == 40
    assert len(index.requests) < 40  # before: one create per submit
    assert sum(n for _, n in index.requests) == 40


async def test_a_lone_row_goes_at_once_and_the_rows_queued_meanwhile_go_together() -> None:
    index = RecordingIndex()
    index.gate.clear()
    first, *others = rows(6)
    lone = asyncio.ensure_future(create_row(index, first))
    await ticks()
    assert index.requests == [("create", 1)]  # no timer: written at once, alone
    queued = [asyncio.ensure_future(create_row(index, row)) for row in others]
    await ticks()
    assert index.requests == [("create", 1)]  # waiting for the batch in flight
    index.gate.set()
    await asyncio.gather(lone, *queued)
    assert index.requests == [("create", 1), ("create_many", 5)]
    assert [await index.get(r.workflow_id, r.created_at) for r in (first, *others)] == [
        first, *others
    ]  # fmt: skip


async def test_a_conflicting_row_lets_the_others_land_with_the_answer_it_gets_alone() -> None:
    """A repeated submit's row exists: the transaction fails whole; written again one by one,
    the other rows land and that row is left as it is (what ``create`` does alone)."""
    index = RecordingIndex()
    batch = rows(8)
    there = replace(batch[5], name="first try")
    await index.create(there)
    index.requests.clear()
    index.gate.clear()
    waiting = [asyncio.ensure_future(create_row(index, row)) for row in batch]
    await ticks()
    index.gate.set()
    assert await asyncio.gather(*waiting) == [None] * 8
    got = [await index.get(r.workflow_id, r.created_at) for r in batch]
    assert got == [*batch[:5], there, *batch[6:]]
    assert index.requests == [("create_many", 8), *[("create", 1)] * 8]
    assert set(index.writes.values()) == {1}


async def test_a_failing_batch_fails_only_its_own_submits() -> None:
    index = RecordingIndex()
    index.fail_batch = {1}
    index.gate.clear()
    batch = rows(6)
    lone = asyncio.ensure_future(create_row(index, batch[0]))
    await ticks()
    failing = [asyncio.ensure_future(create_row(index, row)) for row in batch[1:4]]
    index.gate.set()
    await asyncio.sleep(0)
    index.gate.clear()  # the lone create is done; the failing batch is in flight
    await ticks()
    later = [asyncio.ensure_future(create_row(index, row)) for row in batch[4:]]
    index.gate.set()
    await asyncio.gather(lone, *later)
    for future in failing:
        with pytest.raises(OSError, match="503 on batch 1"):
            await future
    assert index.requests == [("create", 1), ("create_many", 3), ("create_many", 2)]
    stored = [await index.get(r.workflow_id, r.created_at) for r in batch]
    assert stored == [batch[0], None, None, None, *batch[4:]]


async def test_a_batch_whose_reply_was_lost_is_settled_row_by_row() -> None:
    """The repeat of a transaction that landed finds its own rows (ConflictError): each row,
    created alone, finds itself, and every submit succeeds."""

    class LostReply(RecordingIndex):
        async def create_many(self, batch: list[IndexRow]) -> None:
            await super().create_many(batch)
            raise ConflictError("the repeat found the rows its first try wrote")

    index = LostReply()
    index.gate.clear()
    batch = rows(5)
    waiting = [asyncio.ensure_future(create_row(index, row)) for row in batch]
    await ticks()
    index.gate.set()
    await asyncio.gather(*waiting)
    assert [await index.get(r.workflow_id, r.created_at) for r in batch] == batch
    assert set(index.writes.values()) == {1}


async def test_a_failed_row_write_in_a_submit_is_an_incomplete_submit() -> None:
    """The submit's answer when its row's batch fails: IncompleteSubmitError (503, submit again),
    as when its lone create fails."""

    class Down(RecordingIndex):
        async def create(self, row: IndexRow) -> None:
            raise OSError("503 table")

        async def create_many(self, batch: list[IndexRow]) -> None:
            raise OSError("503 table")

    storage = dataclasses.replace(memory_storage("rows"), index=Down())
    wf = compile_text("name: one\ntasks:\n  - {name: a, kwargs: {cmd: echo}}\n")
    answers = await asyncio.gather(
        *(service.submit(storage, wf, now=NOW, workflow_id=f"d{i}") for i in range(5)),
        return_exceptions=True,
    )
    assert all(isinstance(a, IncompleteSubmitError) for a in answers)
    assert all("503 table" in str(a.cause) for a in answers)  # type: ignore[union-attr]


async def test_batches_keep_to_their_bounds() -> None:
    index = RecordingIndex()
    index.gate.clear()
    small = RowBatcher(index, max_rows=4, max_waiting=6)
    waiting = [asyncio.ensure_future(small.create(row)) for row in rows(20)]
    await ticks()
    index.gate.set()
    await asyncio.gather(*waiting)
    sizes = [n for _, n in index.requests]
    assert sum(sizes) == 20
    assert max(sizes) <= 4
    assert len(index.rows) == 20


async def test_a_cancelled_submit_leaves_the_others_written() -> None:
    index = RecordingIndex()
    index.gate.clear()
    batch = rows(4)
    waiting = [asyncio.ensure_future(create_row(index, batch[0]))]
    await ticks()  # the first row is in flight alone
    waiting += [asyncio.ensure_future(create_row(index, row)) for row in batch[1:]]
    await ticks()
    waiting[2].cancel()  # queued, not yet in a batch: its row is never sent
    index.gate.set()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert [await index.get(r.workflow_id, r.created_at) for r in batch] == [
        batch[0], batch[1], None, batch[3]
    ]  # fmt: skip


def test_one_batcher_per_event_loop() -> None:
    index = MemoryIndex()

    async def mine() -> tuple[RowBatcher, RowBatcher]:
        return batcher(index), batcher(index)

    first, again = asyncio.run(mine())
    assert first is again
    other, _ = asyncio.run(mine())
    assert other is not first


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 11), st.integers(0, 6)),  # (row number, arrival tick)
        min_size=1, max_size=30,
    ),
    st.sets(st.integers(0, 11)),  # rows there before (a repeated submit's)
    st.integers(0, 3),  # ticks a request stays in flight
)  # fmt: skip
def test_any_interleaving_stores_each_row_once_with_each_answer_as_alone(
    arrivals: list[tuple[int, int]], existing: set[int], in_flight: int
) -> None:
    """Whatever the arrivals (the same row more than once too) and the requests' durations:
    every row is stored exactly once, a row there before is left as it was, and every create
    answers None (what ``create`` answers alone)."""
    every = rows(12)

    async def run() -> tuple[RecordingIndex, list[Any]]:
        index = RecordingIndex(ticks=in_flight)
        for number in existing:
            await index.create(replace(every[number], name="before"))

        async def arrive(number: int, tick: int) -> None:
            await ticks(tick)
            await create_row(index, every[number])

        answers = await asyncio.gather(*(arrive(n, t) for n, t in arrivals), return_exceptions=True)
        return index, answers

    index, answers = asyncio.run(run())
    assert answers == [None] * len(arrivals)
    assert set(index.writes.values()) <= {1}
    for number in {n for n, _ in arrivals} | existing:
        row = every[number]
        got = asyncio.run(index.get(row.workflow_id, row.created_at))
        assert got == (replace(row, name="before") if number in existing else row)
