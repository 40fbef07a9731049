"""The index table's port (``shared.storage.ports`` re-exports it with the other ports): one
small row per workflow, a projection of the state blobs, never the truth (docs/storage.md)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Protocol

from shared.index_row import IndexRow
from shared.states import WorkflowStatus


@dataclass(frozen=True)
class IndexPage:
    rows: list[IndexRow]
    next: str | None
    """Continuation token for the next page, or None at the end."""


class Index(Protocol):
    """The workflow index table."""

    async def create(self, row: IndexRow) -> None:
        """Insert a new row; if one exists for the workflow already, leave it (idempotent
        submit)."""
        ...

    async def create_many(self, rows: builtins.list[IndexRow]) -> None:
        """Insert new rows, each of its own workflow (at most ``shared.limits.INDEX_BATCH``), in
        one request: a batch transaction of the index's one partition, all or nothing. When
        any of them exists already (a repeated submit's row, or the rows an earlier try of this
        call wrote before its reply was lost) none is written and ConflictError is raised:
        ``create`` them one by one then (``shared.api.index_rows`` does). ValueError for more
        rows than a batch holds, or two rows of one key."""
        ...

    async def project(self, row: IndexRow) -> None:
        """Write the coordinator's projection of a state: merge every field except
        ``cancel_requested``, which it never clobbers, into the row if it exists and holds an
        older version (``IndexRow.newer_than``: the state's run and write count), so a projection
        that lands late never replaces a newer one. A missing row is not created (the API
        creates rows): a projection that lands after a purge (a write stalled in flight) must
        not bring the purged workflow's row back."""
        ...

    async def project_many(self, rows: builtins.list[IndexRow]) -> None:
        """``project`` several rows (one per workflow) in as few requests as the service allows:
        batch transactions of up to ``shared.limits.INDEX_BATCH`` rows of the one index
        partition, each all or nothing. Raises what a failed batch raises (rows of earlier
        batches stay written)."""
        ...

    async def request_cancel(self, workflow_id: str, created_at: float) -> None:
        """Set the durable cancel flag (merge). Raises NotFoundError if the row is missing."""
        ...

    async def clear_cancel(self, workflow_id: str, created_at: float) -> None:
        """Clear the durable cancel flag (the API does this before it sends a rerun, so the
        cancel-poll sweep does not cancel the new run)."""
        ...

    async def get(self, workflow_id: str, created_at: float) -> IndexRow | None:
        """One row (a point read: the row key derives from id and creation time)."""
        ...

    async def list(
        self,
        *,
        status: WorkflowStatus | None = None,
        name_prefix: str | None = None,
        limit: int = 50,
        continuation: str | None = None,
    ) -> IndexPage:
        """Newest first, optionally filtered; cost independent of DAG sizes."""
        ...

    async def delete(self, workflow_id: str, created_at: float) -> None:
        """Delete a row (purge); no error if it is gone."""
        ...

    async def created_before(
        self, before: float, *, limit: int = 100, continuation: str | None = None
    ) -> IndexPage:
        """Rows of workflows created before ``before`` (give or take a millisecond), newest
        first, one page at a time: the candidates of ``purge --older-than``."""
        ...

    async def active(
        self, partition: int | None = None, *, limit: int | None = None
    ) -> builtins.list[IndexRow]:
        """Rows of workflows not yet terminal (the sweeps' work list); with ``partition``, only
        that partition's; with ``limit``, at most that many (a bounded read)."""
        ...
