"""Index-repair of terminal rows, at a bounded cost per sweep.

The sweeps read the active rows; a row that says terminal is never among them. Versioned
projections (``Index.project``) keep a late projection from replacing a newer one, but a terminal
row can still disagree with its state: a retry made the workflow run again and its projection
failed (the row says failed: the workflow is hidden from every sweep), or a stalled writer put
back the row of an earlier workflow of the id. So each sweep also looks at one page of the index,
``TERMINAL_ROWS_PER_SWEEP`` rows, going on from where the previous sweep of this process stopped
(newest first, back to the newest at the end): one query, and one HEAD of the state blob for each
terminal row of this partition in it. A row whose state's metadata says another status, run or
creation time is handed to the ordinary index-repair (the sweep's update of the workflow).
"""

from __future__ import annotations

import asyncio
import logging

from shared.codec.metadata import created_ms_from_metadata, run_from_metadata, status_from_metadata
from shared.errors import NotFoundError
from shared.storage.ports import IndexRow, Storage

log = logging.getLogger("dagq.coordinator")

TERMINAL_ROWS_PER_SWEEP = 100
"""Index rows one sweep looks at beyond the active ones (one page: one query, a HEAD each)."""

HEAD_CONCURRENCY = 16
"""State blob HEADs one sweep has in flight at once."""


class TerminalRows:
    """Where this process's sweeps are in the index (a continuation token; None: the newest)."""

    def __init__(self) -> None:
        self.cursor: str | None = None

    async def disagreeing(self, storage: Storage) -> list[IndexRow]:
        """Terminal rows of the next page that disagree with their state (a row whose state is
        gone is the purge's, not ours). Never raises: the next sweep looks again."""
        try:
            page = await storage.index.list(limit=TERMINAL_ROWS_PER_SWEEP, continuation=self.cursor)
        except Exception as exc:  # a repair: the next sweep reads the page again
            log.warning("index-repair could not read the index: %r", exc)
            return []
        self.cursor = page.next
        rows = [
            row
            for row in page.rows
            if row.status.is_terminal and row.partition == storage.partition
        ]
        slots = asyncio.Semaphore(HEAD_CONCURRENCY)

        async def differs(row: IndexRow) -> bool:
            async with slots:
                try:
                    meta = await storage.workflows.state_metadata(row.workflow_id)
                except NotFoundError:
                    return False
                except Exception as exc:  # unknown: looked at again on the next round
                    log.warning("index-repair could not read %s: %r", row.workflow_id, exc)
                    return False
            created = created_ms_from_metadata(meta)
            return (
                status_from_metadata(meta) not in (None, row.status)
                or run_from_metadata(meta) not in (None, row.run)
                or created not in (None, round(row.created_at * 1000))
            )

        flags = await asyncio.gather(*(differs(row) for row in rows))
        return [row for row, flag in zip(rows, flags, strict=True) if flag]
