"""Write-behind of index rows: the index is a projection of the state blobs (docs/storage.md,
"The index table"), so a busy workflow's row is written at most every ``project_every_s`` (and at
the end of the drain cycle when its status changes). The rows of a cycle are written together, up
to ``INDEX_BATCH`` per batch transaction (every row is in the index's one partition), so
projecting costs a request per cycle rather than one per workflow. A coordinator that keeps its
lease between passes writes, at the end of each pass, only the rows that are due, so a workflow
whose events arrive in many small passes is not projected once per pass; one that gives its lease
up writes everything left first.
A failed write is kept for the next flush: the row is derived data, never the source of truth."""

from __future__ import annotations

import asyncio
import logging
import time

from shared.coordinator.stats import PassStats
from shared.limits import INDEX_BATCH
from shared.states import WorkflowStatus
from shared.storage.ports import Index, IndexRow
from shared.storage.tolerated import TOLERATED, Kind

log = logging.getLogger("dagq.coordinator")

_REMEMBERED = 10_000
"""Rows whose last write this process remembers (beyond that it forgets and writes sooner)."""


class Projector:
    """Pending and last-written index rows of one coordinator."""

    def __init__(self, index: Index, project_every_s: float) -> None:
        self._index = index
        self._every_s = project_every_s
        self._pending: dict[str, IndexRow] = {}
        self._due: set[str] = set()
        """Pending rows to write at the next flush whatever their age (status changes)."""
        self._written: dict[str, tuple[WorkflowStatus, float]] = {}

    async def project(self, row: IndexRow, stats: PassStats, *, urgent: bool = False) -> None:
        """Hold the row for the next ``flush`` (the end of the drain cycle, or of the pass),
        due at once if its status changed or it was last written a while ago; rows held
        together are written together, a batch of up to ``INDEX_BATCH`` per request."""
        last = self._written.get(row.workflow_id)
        now = time.monotonic()
        self._pending[row.workflow_id] = row
        if urgent or last is None or last[0] != row.status or now - last[1] >= self._every_s:
            self._due.add(row.workflow_id)

    async def write(self, row: IndexRow, stats: PassStats) -> None:
        """Write the row now (one request)."""
        self._pending.pop(row.workflow_id, None)
        self._due.discard(row.workflow_id)
        try:
            await self._index.project(row)
        except Exception as exc:  # derived data: the next flush or sweep writes it again
            TOLERATED.count(Kind.PROJECTION, exc, f"workflow {row.workflow_id}")
            self._pending[row.workflow_id] = row
            return
        stats.projections += 1
        self._written_now([row])

    async def flush(self, stats: PassStats, *, due_only: bool = False) -> None:
        """Write the pending rows in batches (``due_only``: only the due ones, and those last
        written ``project_every_s`` ago or more; the others stay pending for a later flush)."""
        now = time.monotonic()
        rows = [
            row
            for wid, row in self._pending.items()
            if not due_only
            or wid in self._due
            or now - self._written.get(wid, (None, -1e18))[1] >= self._every_s
        ]
        if not rows:
            return
        for row in rows:
            del self._pending[row.workflow_id]
            self._due.discard(row.workflow_id)
        batches = [rows[i : i + INDEX_BATCH] for i in range(0, len(rows), INDEX_BATCH)]
        await asyncio.gather(*(self._write_batch(batch, stats) for batch in batches))

    async def _write_batch(self, rows: list[IndexRow], stats: PassStats) -> None:
        try:
            await self._index.project_many(rows)
        except Exception as exc:  # derived data: kept for the next flush (or the sweep)
            TOLERATED.count(Kind.PROJECTION, exc, f"{len(rows)} rows")
            for row in rows:
                self._pending.setdefault(row.workflow_id, row)
                self._due.add(row.workflow_id)
            return
        stats.projections += len(rows)
        self._written_now(rows)

    def _written_now(self, rows: list[IndexRow]) -> None:
        now = time.monotonic()
        for row in rows:
            self._written[row.workflow_id] = (row.status, now)
        if len(self._written) > _REMEMBERED:
            self._written.clear()

    @property
    def pending(self) -> int:
        """Rows waiting to be written."""
        return len(self._pending)
