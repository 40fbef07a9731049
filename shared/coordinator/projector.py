"""Write-behind of index rows: the index is a projection of the state blobs (docs/storage.md,
"The index table"), so a busy workflow's row is written at most every ``project_every_s`` (and at
once when its status changes); a pass writes whatever is left before it ends. A failed write is
kept for the next flush: the row is derived data, never the source of truth."""

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

    async def flush(self, stats: PassStats) -> None:
        """Write every pending row."""
        rows, self._pending = list(self._pending.values()), {}
        await asyncio.gather(*(self.write(row, stats) for row in rows))
