"""Versioned index projections on Azure Tables: a projection replaces a row only when its version
(the state's run and write count, ``IndexRow.newer_than``) is newer than the stored one.

Azure Tables has no merge conditional on a property, so a projection reads the row's version and
ETag, then merges with ``If-Match`` on that ETag; a 412 (someone wrote in between) reads again.
The ETag and version this process last read or wrote of each row are remembered (a bounded LRU),
so a workflow projected again needs no read: its merge goes straight out with the remembered ETag,
and a batch of such rows stays one transaction (each operation with its ``If-Match``). A row not
remembered costs one point read (of two columns) first; a batch whose transaction fails (a row
gone, or written by someone else meanwhile: a cancel flag, another coordinator) is written again
row by row, each read afresh. Each read and merge is repeated on its own after a lost
connection (a merge whose first try landed answers 412 to its repeat: read again, the row holds
the projection's version, nothing more is written).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode
from azure.data.tables.aio import TableClient

from shared.errors import ConfigError, ProjectionConflictError
from shared.limits import INDEX_BATCH
from shared.lru import Lru
from shared.names import INDEX_PARTITION, index_row_key
from shared.storage.azure.retry import connection_lost
from shared.storage.ports import IndexRow
from shared.storage.repeat import with_repeats

REMEMBERED_ROWS = 20_000
"""Rows whose ETag and version one process remembers (beyond that, a projection reads first)."""

MAX_TRIES = 5
"""Reads and conditional merges of one row before its projection is given up (raised: the
projector keeps it for the next flush, and index-repair mends the row)."""

Known = tuple[str, tuple[int, int] | None]
"""A row's ETag and stored version (None: a row written before versions)."""


def stored_version(entity: dict[str, Any]) -> tuple[int, int] | None:
    """The version a stored entity holds (None: no ``Writes`` column, or -1: unversioned)."""
    writes = int(entity.get("Writes", -1))
    return None if writes < 0 else (int(entity.get("Run", 1)), writes)


def _is_precondition_failure(error: HttpResponseError) -> bool:
    return getattr(error, "status_code", None) == 412


class VersionedProjections:
    """Read, then ``If-Match`` merge, of index rows (``AzureIndex.project``, ``project_many``)."""

    def __init__(
        self,
        table: TableClient,
        entity: Callable[[IndexRow], dict[str, Any]],
        missing_table: Callable[[ResourceNotFoundError], ConfigError | None],
    ) -> None:
        self.table = table
        self._entity = entity
        self._missing_table = missing_table
        self._known: Lru[str, Known] = Lru(REMEMBERED_ROWS)

    async def _read(self, key: str) -> Known | None:
        """The row's ETag and version (remembered), or None when it is gone."""
        try:
            entity = await with_repeats(
                lambda: self.table.get_entity(INDEX_PARTITION, key, select=["Run", "Writes"]),
                lost=connection_lost, what="index row version",
            )  # fmt: skip
        except ResourceNotFoundError as error:
            missing = self._missing_table(error)
            if missing:
                raise missing from error
            self._known.pop(key)
            return None
        known = (str(entity.metadata["etag"]), stored_version(dict(entity)))
        self._known.put(key, known)
        return known

    async def one(self, row: IndexRow) -> None:
        """Project ``row`` if its row exists and holds an older version."""
        key = index_row_key(row.workflow_id, row.created_at)
        known = self._known.get(key)
        for _ in range(MAX_TRIES):
            if known is None:
                known = await self._read(key)
                if known is None:
                    return  # gone (purged): never re-created
            etag, version = known
            if not row.newer_than(version):
                return  # the row holds this version or a newer one
            try:
                reply = await self._merge(row, etag)
            except ResourceNotFoundError as error:
                missing = self._missing_table(error)
                if missing:
                    raise missing from error
                self._known.pop(key)
                return
            except HttpResponseError as error:
                if not _is_precondition_failure(error):
                    raise
                self._known.pop(key)
                known = None  # written meanwhile: read it again
                continue
            self._known.put(key, (str(reply["etag"]), row.version))
            return
        raise ProjectionConflictError(f"index row of {row.workflow_id} changed {MAX_TRIES} times")

    async def _merge(self, row: IndexRow, etag: str) -> Mapping[str, Any]:
        """Merge ``row`` if the stored row still has ``etag`` (else a 412)."""
        return await with_repeats(
            lambda: self.table.update_entity(
                self._entity(row), mode=UpdateMode.MERGE, etag=etag,
                match_condition=MatchConditions.IfNotModified,
            ),
            lost=connection_lost, what="index projection",
        )  # fmt: skip

    async def many(self, rows: list[IndexRow]) -> None:
        """Project several rows: one transaction per ``INDEX_BATCH`` of them (after a point read
        of each not remembered); a failed transaction is written again row by row."""
        for start in range(0, len(rows), INDEX_BATCH):
            await self._batch(rows[start : start + INDEX_BATCH])

    async def _batch(self, batch: list[IndexRow]) -> None:
        keys = [index_row_key(row.workflow_id, row.created_at) for row in batch]
        unknown = [key for key in keys if self._known.get(key) is None]
        read = await asyncio.gather(*map(self._read, unknown))
        gone = {key for key, known in zip(unknown, read, strict=True) if known is None}
        chosen: list[tuple[str, IndexRow, str]] = []
        for key, row in zip(keys, batch, strict=True):
            known = None if key in gone else self._known.get(key)
            if known is not None and row.newer_than(known[1]):
                chosen.append((key, row, known[0]))
        if len(chosen) <= 1:
            for _, row, _ in chosen:
                await self.one(row)
            return
        operations: list[Any] = [
            ("update", self._entity(row),
             {"mode": UpdateMode.MERGE, "etag": etag,
              "match_condition": MatchConditions.IfNotModified})
            for _, row, etag in chosen
        ]  # fmt: skip
        try:
            replies = await with_repeats(
                lambda: self.table.submit_transaction(operations),
                lost=connection_lost,
                what="index projections",
            )
        except (ResourceNotFoundError, TableTransactionError, HttpResponseError) as error:
            if isinstance(error, ResourceNotFoundError) and (missing := self._missing_table(error)):
                raise missing from error
            # A row gone or written meanwhile fails the whole batch: each is read again.
            for key, row, _ in chosen:
                self._known.pop(key)
                await self.one(row)
            return
        for (key, row, _), reply in zip(chosen, replies, strict=True):
            self._known.put(key, (str(reply["etag"]), row.version))
