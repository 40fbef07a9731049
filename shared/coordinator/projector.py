"""Write-behind of index rows: the index is a projection of the state blobs (docs/storage.md,
"The index table"), so a busy workflow's row is written at most every ``project_every_s`` (and at
once when its status changes). A coordinator that keeps its lease between passes writes, at the
end of each pass, only the rows that are due, so a workflow whose events arrive in many small
passes is not projected once per pass; one that gives its lease up writes everything left first.
A failed write is kept for the next flush: the row is derived data, never the source of truth."""

from __future__ import annotations

import asyncio
import logging
import time

from shared.coordinator.stats import PassStats
from shared.states import WorkflowStatus
from shared.storage.ports import Index, IndexRow

log = logging.getLogger("dagq.coordinator")

_REMEMBERED = 10_000
"""Rows whose last write this process remembers (beyond that it forgets and writes sooner)."""


class Projector:
    """Pending and last-written index rows of one coordinator."""

    def __init__(self, index: Index, project_every_s: float) -> None:
        self._index = index
        self._every_s = project_every_s
        self._pending: dict[str, IndexRow] = {}
        self._written: dict[str, tuple[WorkflowStatus, float]] = {}

    async def project(self, row: IndexRow, stats: PassStats, *, urgent: bool = False) -> None:
        """Write the row now if its status changed or it was last written a while ago; otherwise
        leave it for ``flush`` (listings may lag by a pass)."""
        last = self._written.get(row.workflow_id)
        now = time.monotonic()
        if urgent or last is None or last[0] != row.status or now - last[1] >= self._every_s:
            await self.write(row, stats)
        else:
            self._pending[row.workflow_id] = row

    async def write(self, row: IndexRow, stats: PassStats) -> None:
        """Write the row now."""
        self._pending.pop(row.workflow_id, None)
        try:
            await self._index.project(row)
        except Exception as exc:  # derived data: the next flush or sweep writes it again
            log.warning("workflow %s: index projection failed: %r", row.workflow_id, exc)
            self._pending[row.workflow_id] = row
            return
        stats.projections += 1
        self._written[row.workflow_id] = (row.status, time.monotonic())
        if len(self._written) > _REMEMBERED:
            self._written.clear()

    async def flush(self, stats: PassStats, *, due_only: bool = False) -> None:
        """Write every pending row (``due_only``: those last written ``project_every_s`` ago or
        more; the others stay pending for a later flush)."""
        now = time.monotonic()
        rows = [
            row
            for row in self._pending.values()
            if not due_only
            or now - self._written.get(row.workflow_id, (None, -1e18))[1] >= self._every_s
        ]
        for row in rows:
            del self._pending[row.workflow_id]
        await asyncio.gather(*(self.write(row, stats) for row in rows))

    @property
    def pending(self) -> int:
        """Rows waiting to be written."""
        return len(self._pending)
