"""The schedules on Azure Table storage, in a table of their own (``{prefix}Schedules``), where
only the app's identity may read or write.

One row per schedule: PartitionKey ``schedule``, RowKey its name (a schedule name holds no
character a RowKey forbids). Columns: ``Cron``, ``Timezone``, ``Params`` and ``Notify`` (compact
JSON), ``Concurrency``, ``CatchUp``, ``Paused``, ``CreatedAt``, ``NotBefore``, ``LastSlot``,
``Runs`` (JSON), ``Note``, and the definition's UTF-8 bytes in binary columns ``Def0`` ...
(``DEF_CHUNK`` bytes each: a column holds at most 64 KiB) with their count in ``DefChunks``.
"""

from __future__ import annotations

import builtins
import json
import logging
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.data.tables import UpdateMode
from azure.data.tables.aio import TableClient

from shared.errors import ConfigError, NotFoundError, StaleStateError
from shared.json_values import parse_untrusted
from shared.names import SCHEDULE_PARTITION
from shared.storage.azure.retry import repeated
from shared.storage.repeat import is_repeat
from shared.storage.schedules import CONCURRENCY, MAX_SCHEDULES, ScheduleRecord, ScheduleSpec

log = logging.getLogger("dagq.storage")

DEF_CHUNK = 60_000
"""Bytes of the definition per binary column."""


def to_entity(record: ScheduleRecord) -> dict[str, Any]:
    """The table entity of a schedule."""
    spec = record.spec
    data = spec.definition.encode("utf-8")
    chunks = [data[i : i + DEF_CHUNK] for i in range(0, len(data), DEF_CHUNK)] or [b""]
    entity: dict[str, Any] = {
        "PartitionKey": SCHEDULE_PARTITION,
        "RowKey": spec.name,
        "Cron": spec.cron,
        "Timezone": spec.timezone,
        "Params": json.dumps(spec.params, separators=(",", ":")),
        "Notify": json.dumps(spec.notify, separators=(",", ":")),
        "Concurrency": spec.concurrency,
        "CatchUp": int(spec.catch_up),
        "Paused": bool(record.paused),
        "CreatedAt": float(record.created_at),
        "NotBefore": float(record.not_before),
        "LastSlot": float(record.last_slot) if record.last_slot is not None else -1.0,
        "Runs": json.dumps(record.runs, separators=(",", ":")),
        "Note": record.note or "",
        "Starting": json.dumps(record.starting, separators=(",", ":")),
        "DefChunks": len(chunks),
    }
    for i, chunk in enumerate(chunks):
        entity[f"Def{i}"] = chunk
    return entity


def _json(entity: Any, key: str, kind: type) -> Any:
    value = parse_untrusted(str(entity.get(key) or ("{}" if kind is dict else "[]")))
    if not isinstance(value, kind):
        raise ValueError(f"{key} is not a JSON {kind.__name__}")
    return value


def from_entity(entity: Any) -> ScheduleRecord:
    """The schedule of an entity written by ``to_entity`` (ValueError if it is not one)."""
    params = _json(entity, "Params", dict)
    notify = _json(entity, "Notify", list)
    runs = _json(entity, "Runs", list)
    starting = _json(entity, "Starting", list)  # absent in rows written before it existed
    concurrency = str(entity["Concurrency"])
    if concurrency not in CONCURRENCY:
        raise ValueError(f"Concurrency {concurrency!r}")
    chunks = int(entity["DefChunks"])
    data = b"".join(bytes(entity[f"Def{i}"]) for i in range(chunks))
    last_slot = float(entity["LastSlot"])
    spec = ScheduleSpec(
        name=str(entity["RowKey"]),
        cron=str(entity["Cron"]),
        definition=data.decode("utf-8"),
        timezone=str(entity["Timezone"]),
        params={str(k): str(v) for k, v in params.items()},
        notify=[str(url) for url in notify],
        concurrency=concurrency,
        catch_up=int(entity["CatchUp"]),
    )
    etag = getattr(entity, "metadata", {}).get("etag") or ""
    return ScheduleRecord(
        spec=spec,
        created_at=float(entity["CreatedAt"]),
        not_before=float(entity["NotBefore"]),
        paused=bool(entity["Paused"]),
        last_slot=None if last_slot < 0 else last_slot,
        runs=[str(run) for run in runs],
        note=str(entity.get("Note") or "") or None,
        starting=[str(run) for run in starting],
        etag=str(etag),
    )


def _missing_table(error: ResourceNotFoundError, table: str) -> ConfigError | None:
    if getattr(error, "error_code", None) == "TableNotFound":
        return ConfigError(
            f"schedules table {table!r} does not exist: deploy the infrastructure for this "
            "prefix, or run ensure_resources (dagq's local setup does)"
        )
    return None


class AzureSchedules:
    """Schedules over one table client."""

    def __init__(self, table: TableClient) -> None:
        self.table = table

    @repeated
    async def create(self, record: ScheduleRecord) -> bool:
        try:
            await self.table.create_entity(to_entity(record))
        except ResourceExistsError:
            if is_repeat():  # the earlier try may have created it: then it holds this record
                stored = await self._get(record.name)
                return stored is not None and stored == record
            return False
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or error from error
        return True

    async def _get(self, name: str) -> ScheduleRecord | None:
        try:
            entity = await self.table.get_entity(SCHEDULE_PARTITION, name)
        except ResourceNotFoundError as error:
            missing = _missing_table(error, self.table.table_name)
            if missing:
                raise missing from error
            return None
        return from_entity(entity)

    @repeated
    async def get(self, name: str) -> ScheduleRecord | None:
        return await self._get(name)

    @repeated
    async def list(self) -> builtins.list[ScheduleRecord]:
        found: builtins.list[ScheduleRecord] = []
        query = self.table.query_entities(
            "PartitionKey eq @p", parameters={"p": SCHEDULE_PARTITION}
        )
        try:
            async for entity in query:
                try:
                    found.append(from_entity(entity))
                except Exception as exc:  # a broken row costs that row only
                    log.warning("skipping an unreadable schedule row: %r", exc)
                if len(found) >= MAX_SCHEDULES:
                    break
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or error from error
        return sorted(found, key=lambda record: record.name)

    @repeated
    async def update(self, record: ScheduleRecord) -> str:
        try:
            meta = await self.table.update_entity(
                to_entity(record),
                mode=UpdateMode.REPLACE,
                etag=record.etag,
                match_condition=MatchConditions.IfNotModified,
            )
        except ResourceNotFoundError as error:
            raise _missing_table(error, self.table.table_name) or NotFoundError(
                f"schedule {record.name!r} does not exist"
            ) from error
        except ResourceModifiedError as error:
            if is_repeat():  # the earlier try may have written it: then it holds this record
                stored = await self._get(record.name)
                if stored is not None and stored == record:
                    return stored.etag
            raise StaleStateError(f"schedule {record.name!r} changed meanwhile") from error
        return str(meta.get("etag", ""))

    @repeated
    async def delete(self, name: str, etag: str | None = None) -> bool:
        try:
            await self.table.get_entity(SCHEDULE_PARTITION, name, select=["RowKey"])
        except ResourceNotFoundError as error:
            missing = _missing_table(error, self.table.table_name)
            if missing:
                raise missing from error
            return False  # (a repeat whose first try deleted it finds it gone too)
        try:
            if etag is None:
                await self.table.delete_entity(SCHEDULE_PARTITION, name)
            else:
                await self.table.delete_entity(
                    SCHEDULE_PARTITION, name, etag=etag,
                    match_condition=MatchConditions.IfNotModified,
                )  # fmt: skip
        except ResourceModifiedError as error:
            raise StaleStateError(f"schedule {name!r} changed meanwhile") from error
        return True
