"""The registry on Azure Table storage, in a table of its own (``{prefix}WorkersRegistry``): the
workers' identity may write there and nowhere in the workflow index. Every read is bounded
(``MAX_REGISTRY_ROWS`` per partition) and skips, with a warning, a row it cannot read, so a forged
or broken row costs that row only.

- ``worker`` / RowKey = the worker id, percent-quoted (a RowKey may not hold ``/ \\ # ?`` or
  control characters): ``Host``, ``Queues`` (comma-joined), ``Slots``, ``Busy``, ``Tasks``,
  ``Progress`` and ``Gpus`` (compact JSON, bounded: see ``shared.storage.registry``), ``Version``,
  ``StartedAt``, ``LastSeen``, ``IntervalS``. The service's ``Timestamp`` of the
  entity is read back as ``server_seen``.
- ``queue`` / RowKey = the queue name: ``NotedAt``.
- ``mark`` / RowKey = the job name: ``At``.
- ``machine-YYYYMM`` (the month of boot) / RowKey = the host and boot second, percent-quoted:
  ``Host``, ``Boot`` (the kernel's), ``BootedAt`` (since when it counts), ``LastSeen``,
  ``VmSize``, ``Gpus``
  (``shared.storage.machines``).
- ``failure`` / RowKey = source and kind, percent-quoted and joined by ``|``: ``Source``,
  ``Kind``, ``Count``, ``Detail``, ``At`` (``shared.storage.tolerated``).
"""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import UpdateMode
from azure.data.tables.aio import TableClient

from shared.errors import ConfigError
from shared.json_values import json_problem, parse_untrusted
from shared.limits import (
    MAX_COUNTER,
    MAX_RECORD_TASKS,
    MAX_REGISTRY_READ_BYTES,
    MAX_REGISTRY_ROWS,
    MAX_TIMESTAMP_S,
)
from shared.names import FAILURE_PARTITION, QUEUE_PARTITION, WORKER_PARTITION
from shared.storage.azure.index import odata_string
from shared.storage.azure.retry import repeated
from shared.storage.machines import (
    MachineLife,
    bounded_life,
    machine_partition,
    partitions_between,
)
from shared.storage.registry import (
    FailureNote,
    WorkerRecord,
    WorkerTask,
    bounded_note,
    finite,
    gpus_from_text,
    gpus_text,
    incarnations_text,
    progress_text,
    with_incarnations,
    with_progress,
)

log = logging.getLogger("dagq.storage")
T = TypeVar("T")

MAX_ROW_KEY = 1024
"""Azure's limit on a RowKey."""


def worker_row_key(worker_id: str) -> str:
    """The RowKey of a worker's record. ConfigError if the id is too long to be one."""
    key = quote(worker_id, safe="")
    if not worker_id or len(key) > MAX_ROW_KEY:
        raise ConfigError(
            f"worker id {worker_id[:40]!r} is empty or too long: use at most 300 characters"
        )
    return key


def to_entity(record: WorkerRecord) -> dict[str, Any]:
    """The table entity of a worker record."""
    tasks = [[t.workflow_id, t.task, t.attempt] for t in record.tasks[:MAX_RECORD_TASKS]]
    return {
        "PartitionKey": WORKER_PARTITION,
        "RowKey": worker_row_key(record.worker_id),
        "WorkerId": record.worker_id,
        "Host": record.host,
        "Queues": ",".join(record.queues),
        "Slots": int(record.slots),
        "Busy": int(record.busy_slots),
        "Tasks": json.dumps(tasks, separators=(",", ":")),
        "Version": record.version,
        "StartedAt": float(record.started_at),
        "LastSeen": float(record.last_seen),
        "IntervalS": float(record.interval_s),
        "BusyS": float(record.busy_s),
        "Progress": progress_text(record.tasks),
        "Incarnations": incarnations_text(record.tasks[:MAX_RECORD_TASKS]),
        "Gpus": gpus_text(record.gpus),
        "LiveErrors": int(record.live_errors),
    }


def from_entity(entity: Any) -> WorkerRecord:
    """The worker record of an entity written by ``to_entity``. The row is untrusted (any holder
    of the workers' table role can write it): every number must be finite and in range, every
    string valid Unicode, JSON columns are parsed by ``parse_untrusted``; anything else raises
    (``_readable`` skips the row)."""
    queues = _text(entity, "Queues")
    stamp = getattr(entity, "metadata", {}).get("timestamp")
    tasks = parse_untrusted(_text(entity, "Tasks") or "[]")
    if not isinstance(tasks, list):
        raise ValueError("Tasks is not a JSON list")
    return WorkerRecord(
        worker_id=_text(entity, "WorkerId", required=True),
        host=_text(entity, "Host"),
        queues=queues.split(",") if queues else [],
        slots=_count(entity, "Slots"),
        busy_slots=_count(entity, "Busy"),
        tasks=with_incarnations(
            with_progress(
                [_task(entry) for entry in tasks[:MAX_RECORD_TASKS]],
                _text(entity, "Progress") or "[]",
            ),
            _text(entity, "Incarnations") or "[]",
        ),
        gpus=gpus_from_text(_text(entity, "Gpus") or "[]"),
        version=_text(entity, "Version"),
        started_at=_time(entity, "StartedAt"),
        last_seen=_time(entity, "LastSeen"),
        interval_s=_time(entity, "IntervalS"),
        busy_s=_time(entity, "BusyS"),
        row_key=str(entity["RowKey"]),
        live_errors=_count(entity, "LiveErrors"),
        server_seen=stamp.timestamp() if isinstance(stamp, datetime) else None,
    )


def _text(entity: Any, key: str, *, required: bool = False) -> str:
    value = entity[key] if required else entity.get(key)
    text = "" if value is None else str(value)
    problem = json_problem(text)
    if problem is not None:
        raise ValueError(f"{key}: {problem}")
    return text


def _time(entity: Any, key: str) -> float:
    """A finite number of seconds (an epoch time or a duration) within MAX_TIMESTAMP_S."""
    return finite(entity.get(key, 0.0), MAX_TIMESTAMP_S)


def _count(entity: Any, key: str) -> int:
    value = entity.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNTER:
        raise ValueError(f"{key} is not a count: {str(value)[:40]!r}")
    return value


def _task(entry: Any) -> WorkerTask:
    workflow_id, task, attempt = entry
    if not all(isinstance(v, str) for v in (workflow_id, task)) or isinstance(attempt, bool):
        raise ValueError(f"task entry {str(entry)[:80]!r} is malformed")
    if not isinstance(attempt, int) or not 0 <= attempt <= MAX_COUNTER:
        raise ValueError(f"task entry {str(entry)[:80]!r} has no attempt number")
    return WorkerTask(workflow_id, task, attempt)


def _readable(entities: builtins.list[Any], read: Callable[[Any], T]) -> builtins.list[T]:
    """``read`` of each entity, skipping (and logging) those it cannot read: whatever a row
    holds, whatever reading it raises, it costs that row only."""
    out: builtins.list[T] = []
    for entity in entities:
        try:
            out.append(read(entity))
        except Exception as exc:
            log.warning("registry row %r cannot be read, skipped: %s",
                        ascii(str(entity.get("RowKey"))[:100]), ascii(repr(exc)[:200]))  # fmt: skip
    return out


COLUMNS = {
    WORKER_PARTITION: [
        "RowKey", "WorkerId", "Host", "Queues", "Slots", "Busy", "Tasks", "Progress", "Gpus",
        "Version", "StartedAt", "LastSeen", "IntervalS", "BusyS", "LiveErrors", "Incarnations",
        "Timestamp",
    ],
    QUEUE_PARTITION: ["RowKey", "NotedAt"],
    FAILURE_PARTITION: ["RowKey", "Source", "Kind", "Count", "Detail", "At"],
}  # fmt: skip
MACHINE_COLUMNS = ["Host", "BootedAt", "LastSeen", "VmSize", "Gpus", "Boot"]
"""The columns of a ``machine-YYYYMM`` partition's rows (``note_machine``)."""
"""The columns each partition's rows are read with (what ``to_entity`` and the others write)."""


class AzureRegistry:
    """Registry over the registry table's client."""

    def __init__(self, table: TableClient) -> None:
        self.table = table

    async def _partition(
        self, partition: str, columns: builtins.list[str] | None = None
    ) -> builtins.list[Any]:
        """The partition's rows, their known columns only (``COLUMNS``: the service sends no
        other), within ``MAX_REGISTRY_ROWS`` rows and ``MAX_REGISTRY_READ_BYTES`` of values."""
        query = f"PartitionKey eq {odata_string(partition)}"
        pages = self.table.query_entities(
            query, results_per_page=MAX_REGISTRY_ROWS, select=columns or COLUMNS[partition]
        )
        entities: builtins.list[Any] = []
        held = 0
        async for entity in pages:
            held += sum(len(str(value)) for value in entity.values())
            if held > MAX_REGISTRY_READ_BYTES:
                log.warning("registry partition %r holds more than %d bytes: read the first"
                            " %d rows only", partition, MAX_REGISTRY_READ_BYTES,
                            len(entities))  # fmt: skip
                break
            entities.append(entity)
            if len(entities) >= MAX_REGISTRY_ROWS:
                log.warning("registry partition %r has more than %d rows: read the first only",
                            partition, MAX_REGISTRY_ROWS)  # fmt: skip
                break
        return entities

    @repeated
    async def beat(self, record: WorkerRecord) -> None:
        await self.table.upsert_entity(to_entity(record), mode=UpdateMode.REPLACE)

    @repeated
    async def remove(self, worker_id: str, *, row_key: str | None = None) -> None:
        key = row_key if row_key is not None else worker_row_key(worker_id)
        # delete_entity is a no-op for a missing entity (the SDK swallows the 404): belt and braces.
        with suppress(ResourceNotFoundError):
            await self.table.delete_entity(WORKER_PARTITION, key)

    @repeated
    async def workers(self) -> builtins.list[WorkerRecord]:
        entities = await self._partition(WORKER_PARTITION)
        return sorted(_readable(entities, from_entity), key=lambda r: r.worker_id)

    @repeated
    async def note_queues(self, queues: builtins.list[str], at: float) -> None:
        for queue in queues:
            entity = {"PartitionKey": QUEUE_PARTITION, "RowKey": queue, "NotedAt": float(at)}
            await self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)

    @repeated
    async def queues(self) -> dict[str, float]:
        entities = await self._partition(QUEUE_PARTITION)
        return dict(_readable(entities, lambda e: (_text(e, "RowKey"), _time(e, "NotedAt"))))

    @repeated
    async def note_failure(self, note: FailureNote) -> None:
        note = bounded_note(note)
        entity = {
            "PartitionKey": FAILURE_PARTITION,
            "RowKey": quote(note.source, safe="") + "|" + quote(note.kind, safe=""),
            "Source": note.source,
            "Kind": note.kind,
            "Count": note.count,
            "Detail": note.detail,
            "At": note.at,
        }
        await self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)

    @repeated
    async def failures(self) -> builtins.list[FailureNote]:
        entities = await self._partition(FAILURE_PARTITION)
        return _readable(entities, _note_from_entity)

    @repeated
    async def note_machine(self, life: MachineLife) -> None:
        life = bounded_life(life)
        entity = {
            "PartitionKey": machine_partition(life.booted_at),
            "RowKey": quote(life.machine, safe=""),
            "Host": life.host,
            "BootedAt": life.booted_at,
            "LastSeen": life.last_seen,
            "VmSize": life.vm_size,
            "Gpus": life.gpus,
            "Boot": life.boot_key,
        }
        await self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)

    @repeated
    async def machines(self, since: float, until: float) -> builtins.list[MachineLife]:
        out: builtins.list[MachineLife] = []
        for partition in partitions_between(since, until):
            entities = await self._partition(partition, MACHINE_COLUMNS)
            out.extend(_readable(entities, _life_from_entity))
        return [life for life in out if life.hours_within(since, until) > 0]


def _life_from_entity(entity: Any) -> MachineLife:
    return bounded_life(
        MachineLife(
            host=_text(entity, "Host", required=True),
            booted_at=_time(entity, "BootedAt"),
            last_seen=_time(entity, "LastSeen"),
            vm_size=_text(entity, "VmSize"),
            gpus=_count(entity, "Gpus"),
            boot=_time(entity, "Boot"),
        )
    )


def _note_from_entity(entity: Any) -> FailureNote:
    return bounded_note(
        FailureNote(
            _text(entity, "Source", required=True),
            _text(entity, "Kind", required=True),
            _count(entity, "Count"),
            _text(entity, "Detail"),
            _time(entity, "At"),
        )
    )
