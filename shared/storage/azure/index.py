"""The workflow index on Azure Table storage: one small entity per workflow.

PartitionKey ``shared.names.INDEX_PARTITION`` (one partition, scanned in RowKey order); RowKey
``index_row_key(id, created_at)`` (an inverted timestamp, so the scan is newest first and a row is a
point read). ``counts`` is a compact JSON string, ``queues`` a comma-joined string. ``error`` and
``finished_at`` are always written (``""`` and ``-1`` stand for None) so that a merge clears them.

Filters run on the service: status with ``eq``, name prefix as the range ``Name ge 'p' and Name lt
'q'`` (the prefix with its last character incremented). A filtered page may come back short from
the service; ``list`` then keeps reading until it has ``limit`` rows, the scan ends, or it made
``MAX_CALLS_PER_PAGE`` calls (then the page is short and ``next`` says where to go on).
"""

from __future__ import annotations

import builtins
import json
import logging
from typing import Any

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.data.tables import UpdateMode
from azure.data.tables.aio import TableClient

from shared.errors import ConfigError, ConflictError, NotFoundError
from shared.json_values import parse_untrusted
from shared.limits import MAX_INDEX_ERROR_CHARS
from shared.names import INDEX_PARTITION, index_row_key
from shared.states import WorkflowStatus
from shared.storage.azure.projections import VersionedProjections
from shared.storage.azure.retry import repeated
from shared.storage.encoding import (
    MAX_PAGE,
    batch_keys,
    created_before_key,
    decode_continuation,
    encode_continuation,
    finite_time,
)
from shared.storage.ports import IndexPage, IndexRow

log = logging.getLogger("dagq.storage")

MAX_CALLS_PER_PAGE = 10
"""Service calls one ``list`` makes at most to fill a filtered page; past that it returns a short
page with a continuation token, so a rare filter over a huge table cannot hold a request long."""

_TOKEN_KEYS = frozenset({"PartitionKey", "RowKey"})
_NON_TERMINAL = [status for status in WorkflowStatus if not status.is_terminal]


def odata_string(value: str) -> str:
    """A quoted OData string literal (single quotes doubled), safe to put in a filter."""
    return "'" + value.replace("'", "''") + "'"


def prefix_upper_bound(prefix: str) -> str | None:
    """A string above every string that starts with ``prefix`` (None: there is none).

    The bound holds in code-point order and in UTF-16 code-unit order (which the table service
    compares in), and is itself valid text: the next character after U+D7FF is U+10000, not a lone
    surrogate, and a last character with no successor valid in both orders (U+FFFF, U+10FFFF)
    is dropped and the one before it advanced instead. Raises ValueError for a lone surrogate.
    """
    for cut in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[cut])
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"a name prefix cannot contain a lone surrogate (U+{code:04X})")
        if code in (0xFFFF, 0x10FFFF):
            continue
        following = 0x10000 if code == 0xD7FF else code + 1
        return prefix[:cut] + chr(following)
    return None


def prefix_filter(prefix: str) -> str:
    """``Name`` starts with ``prefix``, as a range on the service (``list`` checks each row
    again: the range may be wider than the prefix, never narrower)."""
    lower = f"Name ge {odata_string(prefix)}"
    upper = prefix_upper_bound(prefix)
    return lower if upper is None else f"{lower} and Name lt {odata_string(upper)}"


def to_entity(row: IndexRow, *, with_cancel: bool) -> dict[str, Any]:
    """The table entity of ``row`` (without ``CancelRequested`` unless ``with_cancel``)."""
    entity: dict[str, Any] = {
        "PartitionKey": INDEX_PARTITION,
        "RowKey": index_row_key(row.workflow_id, row.created_at),
        "WorkflowId": row.workflow_id,
        "Name": row.name,
        "Status": str(row.status),
        "CreatedAt": float(row.created_at),
        "UpdatedAt": float(row.updated_at),
        "Partition": int(row.partition),
        "Total": int(row.total),
        "Counts": json.dumps(row.counts, separators=(",", ":"), sort_keys=True),
        "Queues": ",".join(row.queues),
        "Run": int(row.run),
        "Error": (row.error or "")[:MAX_INDEX_ERROR_CHARS],
        "FinishedAt": -1.0 if row.finished_at is None else float(row.finished_at),
        "Writes": -1 if row.writes is None else int(row.writes),
    }
    if with_cancel:
        entity["CancelRequested"] = bool(row.cancel_requested)
    return entity


def from_entity(entity: dict[str, Any]) -> IndexRow:
    """The IndexRow of a table entity written by ``to_entity`` (and merges of the cancel flag).
    Times must be finite and in range, ``Counts`` a JSON object (``parse_untrusted``), else it
    raises (``parsed`` skips the row)."""
    finished = float(entity.get("FinishedAt", -1.0))
    writes = int(entity.get("Writes", -1))
    queues = str(entity.get("Queues", ""))
    counts = parse_untrusted(entity.get("Counts") or "{}")
    if not isinstance(counts, dict):
        raise ValueError("Counts is not a JSON object")
    return IndexRow(
        workflow_id=str(entity["WorkflowId"]),
        name=str(entity["Name"]),
        status=WorkflowStatus(entity["Status"]),
        created_at=finite_time(entity["CreatedAt"]),
        updated_at=finite_time(entity["UpdatedAt"]),
        partition=int(entity.get("Partition", 0)),
        total=int(entity.get("Total", 0)),
        counts={str(k): int(v) for k, v in counts.items()},
        queues=queues.split(",") if queues else [],
        run=int(entity.get("Run", 1)),
        cancel_requested=bool(entity.get("CancelRequested", False)),
        error=str(entity.get("Error") or "") or None,
        finished_at=None if finished < 0 else finite_time(finished),
        writes=None if writes < 0 else writes,
    )


def parsed(entity: dict[str, Any]) -> IndexRow | None:
    """``from_entity``, or None (logged with its keys) for a row that cannot be read: one bad row
    must not stop listings, sweeps or doctor for every other workflow."""
    try:
        return from_entity(entity)
    except Exception as exc:  # whatever a row holds, it costs that row only
        log.warning(
            "index row %s/%s cannot be read, skipped: %s",
            ascii(str(entity.get("PartitionKey"))[:100]), ascii(str(entity.get("RowKey"))[:100]),
            ascii(repr(exc)[:200]),
        )  # fmt: skip
        return None


def _missing_table(error: HttpResponseError, table: str) -> ConfigError | None:
    if getattr(error, "error_code", None) == "TableNotFound":
        return ConfigError(
            f"index table {table!r} does not exist: deploy the infrastructure for this prefix, "
            "or run ensure_resources (dagq's local setup does)"
        )
    return None


class AzureIndex:
    """Index over one table client."""

    def __init__(self, table: TableClient) -> None:
        self.table = table
        self._projections = VersionedProjections(
            table,
            lambda row: to_entity(row, with_cancel=False),
            lambda error: _missing_table(error, table.table_name),
        )

    @repeated
    async def create(self, row: IndexRow) -> None:
        try:
            await self.table.create_entity(to_entity(row, with_cancel=True))
        except ResourceExistsError:
            pass  # a retried submit: the first row stays (Azurite sends no error code here)
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or error from error

    @repeated
    async def create_many(self, rows: builtins.list[IndexRow]) -> None:
        # One transaction of inserts (every row is in the one index partition): a row that
        # exists fails it whole, with the 409 of that insert (TableTransactionError).
        keys = batch_keys(rows)
        if not rows:
            return
        operations: builtins.list[Any] = [
            ("create", to_entity(row, with_cancel=True)) for row in rows
        ]
        try:
            await self.table.submit_transaction(operations)
        except HttpResponseError as error:  # TableTransactionError: one operation's answer
            if isinstance(error, ResourceExistsError) or error.status_code == 409:
                index = getattr(error, "index", 0)
                key = keys[index] if 0 <= index < len(keys) else keys[0]
                raise ConflictError(
                    f"index row {key} exists already: no row of the batch written"
                ) from error
            raise _missing_table(error, self.table.table_name) or error from error

    @repeated
    async def project(self, row: IndexRow) -> None:
        # Update-merge of every field but the cancel flag (a cancel written concurrently
        # survives), conditional on the row's version: read, then If-Match (projections.py). A
        # row that is gone (purged) stays gone: a projection that lands late, after a purge,
        # must not bring the purged workflow's row back.
        await self._projections.one(row)

    @repeated
    async def project_many(self, rows: builtins.list[IndexRow]) -> None:
        # Every row is in the one index partition: a transaction writes up to INDEX_BATCH of
        # them in one request (each merge If-Match on the ETag of the version it replaces).
        await self._projections.many(rows)

    async def _set_cancel(self, workflow_id: str, created_at: float, value: bool) -> None:
        entity = {
            "PartitionKey": INDEX_PARTITION,
            "RowKey": index_row_key(workflow_id, created_at),
            "CancelRequested": value,
        }
        try:
            # update (not upsert) sends If-Match: *, so a missing row is a 404, never a stub row.
            await self.table.update_entity(entity, mode=UpdateMode.MERGE)
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or NotFoundError(
                f"workflow {workflow_id!r} has no index row"
            ) from error

    @repeated
    async def request_cancel(self, workflow_id: str, created_at: float) -> None:
        await self._set_cancel(workflow_id, created_at, True)

    @repeated
    async def clear_cancel(self, workflow_id: str, created_at: float) -> None:
        await self._set_cancel(workflow_id, created_at, False)

    @repeated
    async def get(self, workflow_id: str, created_at: float) -> IndexRow | None:
        try:
            entity = await self.table.get_entity(
                INDEX_PARTITION, index_row_key(workflow_id, created_at)
            )
        except ResourceNotFoundError as error:
            missing = _missing_table(error, self.table.table_name)
            if missing:
                raise missing from error
            return None
        return parsed(entity)

    @repeated
    async def list(
        self,
        *,
        status: WorkflowStatus | None = None,
        name_prefix: str | None = None,
        limit: int = 50,
        continuation: str | None = None,
    ) -> IndexPage:
        limit = min(max(limit, 1), MAX_PAGE)
        token: dict[str, str] | None = None
        if continuation is not None:
            token = decode_continuation(continuation, _TOKEN_KEYS)
        clauses = [f"PartitionKey eq {odata_string(INDEX_PARTITION)}"]
        if status is not None:
            clauses.append(f"Status eq {odata_string(str(status))}")
        if name_prefix:
            clauses.append(prefix_filter(name_prefix))
        query = " and ".join(clauses)

        rows: builtins.list[IndexRow] = []
        for _ in range(MAX_CALLS_PER_PAGE):
            query_pages = self.table.query_entities(query, results_per_page=limit - len(rows))
            # The SDK's entity continuation is a dict, though by_page is typed for strings.
            pages = query_pages.by_page(continuation_token=token)  # type: ignore[arg-type]
            try:
                page = await pages.__anext__()
                found = [row async for entity in page if (row := parsed(entity)) is not None]
                rows += [r for r in found if not name_prefix or r.name.startswith(name_prefix)]
            except ResourceNotFoundError as error:
                raise _missing_table(error, self.table.table_name) or error from error
            except StopAsyncIteration:
                token = None
                break
            token = pages.continuation_token  # type: ignore[attr-defined]
            if not token or len(rows) >= limit:
                break
        next_token = encode_continuation({k: v for k, v in token.items() if v}) if token else None
        return IndexPage(rows, next_token)

    @repeated
    async def delete(self, workflow_id: str, created_at: float) -> None:
        # delete_entity sends If-Match: * and ignores a missing entity.
        try:
            await self.table.delete_entity(INDEX_PARTITION, index_row_key(workflow_id, created_at))
        except ResourceNotFoundError as error:
            missing = _missing_table(error, self.table.table_name)
            if missing:
                raise missing from error

    @repeated
    async def created_before(
        self, before: float, *, limit: int = 100, continuation: str | None = None
    ) -> IndexPage:
        limit = min(max(limit, 1), MAX_PAGE)
        token = None
        if continuation is not None:
            token = decode_continuation(continuation, _TOKEN_KEYS)
        query = (
            f"PartitionKey eq {odata_string(INDEX_PARTITION)}"
            f" and RowKey gt {odata_string(created_before_key(before))}"
        )
        pages = self.table.query_entities(query, results_per_page=limit).by_page(
            continuation_token=token  # type: ignore[arg-type]
        )
        try:
            page = await pages.__anext__()
            rows = [row async for entity in page if (row := parsed(entity)) is not None]
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or error from error
        except StopAsyncIteration:
            return IndexPage([], None)
        token = pages.continuation_token  # type: ignore[attr-defined]
        next_token = encode_continuation({k: v for k, v in token.items() if v}) if token else None
        return IndexPage(rows, next_token)

    @repeated
    async def active(
        self, partition: int | None = None, *, limit: int | None = None
    ) -> builtins.list[IndexRow]:
        statuses = " or ".join(f"Status eq {odata_string(str(s))}" for s in _NON_TERMINAL)
        query = f"PartitionKey eq {odata_string(INDEX_PARTITION)} and ({statuses})"
        if partition:  # rows written before partitions existed have no Partition: they are 0
            query += f" and Partition eq {int(partition)}"
        try:
            rows: builtins.list[IndexRow] = []
            async for entity in self.table.query_entities(query):
                row = parsed(entity)
                if row is not None and partition in (None, row.partition):
                    rows.append(row)
                if limit is not None and len(rows) >= limit:
                    break
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or error from error
        return rows
