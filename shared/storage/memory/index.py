"""The workflow index in memory: rows in key order (newest first); a projection never clobbers
``cancel_requested`` and replaces only an older version of the row (``IndexRow.newer_than``: the
Azure adapter's read, then ``If-Match`` write, here in one step)."""

from __future__ import annotations

import builtins
from dataclasses import replace

from shared.errors import ConflictError, NotFoundError
from shared.limits import MAX_INDEX_ERROR_CHARS
from shared.names import index_row_key
from shared.states import WorkflowStatus
from shared.storage.encoding import (
    MAX_PAGE,
    batch_keys,
    created_before_key,
    decode_continuation,
    encode_continuation,
)
from shared.storage.ports import IndexPage, IndexRow

_PROJECTED_FIELDS = tuple(
    name for name in IndexRow.__dataclass_fields__ if name != "cancel_requested"
)


def _copy_row(row: IndexRow) -> IndexRow:
    error = row.error[:MAX_INDEX_ERROR_CHARS] if row.error else None  # as the table keeps it
    return replace(row, counts=dict(row.counts), queues=list(row.queues), error=error)


class MemoryIndex:
    """The index table: rows keyed by ``index_row_key``, scanned in key order (newest first)."""

    def __init__(self) -> None:
        self.rows: dict[str, IndexRow] = {}

    async def create(self, row: IndexRow) -> None:
        self.rows.setdefault(index_row_key(row.workflow_id, row.created_at), _copy_row(row))

    async def create_many(self, rows: builtins.list[IndexRow]) -> None:
        keys = batch_keys(rows)
        found = [key for key in keys if key in self.rows]
        if found:  # all or nothing, as a batch transaction
            raise ConflictError(f"index row {found[0]} exists already: no row of the batch written")
        for key, row in zip(keys, rows, strict=True):
            self.rows[key] = _copy_row(row)

    async def project(self, row: IndexRow) -> None:
        key = index_row_key(row.workflow_id, row.created_at)
        current = self.rows.get(key)
        if current is None:
            return  # an update-merge: a row that is gone (purged) stays gone
        if not row.newer_than(current):
            return  # a projection that landed late: the row holds a newer one
        fresh = _copy_row(row)
        for name in _PROJECTED_FIELDS:
            setattr(current, name, getattr(fresh, name))

    async def project_many(self, rows: builtins.list[IndexRow]) -> None:
        for row in rows:
            await self.project(row)

    def _existing(self, workflow_id: str, created_at: float) -> IndexRow:
        row = self.rows.get(index_row_key(workflow_id, created_at))
        if row is None:
            raise NotFoundError(f"workflow {workflow_id!r} has no index row")
        return row

    async def request_cancel(self, workflow_id: str, created_at: float) -> None:
        self._existing(workflow_id, created_at).cancel_requested = True

    async def clear_cancel(self, workflow_id: str, created_at: float) -> None:
        self._existing(workflow_id, created_at).cancel_requested = False

    async def get(self, workflow_id: str, created_at: float) -> IndexRow | None:
        row = self.rows.get(index_row_key(workflow_id, created_at))
        return _copy_row(row) if row else None

    async def list(
        self,
        *,
        status: WorkflowStatus | None = None,
        name_prefix: str | None = None,
        limit: int = 50,
        continuation: str | None = None,
    ) -> IndexPage:
        after = ""
        if continuation is not None:
            after = decode_continuation(continuation, frozenset({"after"}))["after"]
        matching = [
            key
            for key in sorted(self.rows)
            if key > after
            and (status is None or self.rows[key].status == status)
            and (not name_prefix or self.rows[key].name.startswith(name_prefix))
        ]
        page = matching[: min(max(limit, 1), MAX_PAGE)]
        more = len(matching) > len(page)
        token = encode_continuation({"after": page[-1]}) if more else None
        return IndexPage([_copy_row(self.rows[key]) for key in page], token)

    async def delete(self, workflow_id: str, created_at: float) -> None:
        self.rows.pop(index_row_key(workflow_id, created_at), None)

    async def created_before(
        self, before: float, *, limit: int = 100, continuation: str | None = None
    ) -> IndexPage:
        after = created_before_key(before)
        if continuation is not None:
            after = max(after, decode_continuation(continuation, frozenset({"after"}))["after"])
        matching = [key for key in sorted(self.rows) if key > after]
        page = matching[: min(max(limit, 1), MAX_PAGE)]
        more = len(matching) > len(page)
        token = encode_continuation({"after": page[-1]}) if more else None
        return IndexPage([_copy_row(self.rows[key]) for key in page], token)

    async def active(
        self, partition: int | None = None, *, limit: int | None = None
    ) -> builtins.list[IndexRow]:
        rows = [
            _copy_row(row)
            for _, row in sorted(self.rows.items())
            if not row.status.is_terminal and partition in (None, row.partition)
        ]
        return rows if limit is None else rows[: max(limit, 0)]
