"""The registry port: who is alive in a deployment, kept in the index table under partitions of
its own (``shared.names.REGISTRY_PARTITIONS``), never in the workflows' partition.

- one record per running worker agent (its heartbeat: queues, slots, current tasks, times),
  written every ``registry_interval_s`` and removed on a clean stop;
- one record per queue any worker ever polled (so ``dagq doctor`` can tell a queue nobody serves
  from one whose workers are merely down), never removed;
- one mark per recurring job (``sweep``): when it last ran, so an overdue sweep shows.

Times written by a worker come from the worker's clock (``last_seen``); ``server_seen`` is the
storage service's own time of the last write, so the two disagreeing shows a skewed clock.
"""

from __future__ import annotations

import builtins
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from shared.json_values import parse_untrusted
from shared.limits import MAX_COUNTER, MAX_GPUS, MAX_PROGRESS_CHARS, MAX_RECORD_TASKS
from shared.progress import TaskProgress
from shared.storage.machines import MachineLife


@dataclass(frozen=True)
class WorkerTask:
    """One attempt a worker is running."""

    workflow_id: str
    task: str
    attempt: int
    progress: TaskProgress | None = None
    """What the task last reported through ``$DAGQ_PROGRESS`` (None: nothing yet)."""
    incarnation: int | None = None
    """The incarnation of the workflow id the attempt belongs to (its task message's; None from
    older workers): the progress of a purged workflow's attempt is never its successor's."""


@dataclass(frozen=True)
class GpuUse:
    """One GPU of a worker machine at its latest sample (``nvidia-smi``)."""

    index: int
    utilization: float
    """Percent of the last sample period the GPU was busy (0-100)."""
    memory_used_mib: float
    memory_total_mib: float


def progress_text(tasks: builtins.list[WorkerTask]) -> str:
    """The tasks' progress as compact JSON ``[[task index, {p, m}], ...]``, within
    ``MAX_PROGRESS_CHARS``."""
    parts: builtins.list[str] = []
    used = 2
    for i, task in enumerate(tasks[:MAX_RECORD_TASKS]):
        if task.progress is None or task.progress.empty:
            continue
        part = json.dumps([i, task.progress.to_json()], separators=(",", ":"))
        if used + len(part) + 1 > MAX_PROGRESS_CHARS:
            break
        parts.append(part)
        used += len(part) + 1
    return "[" + ",".join(parts) + "]"


def with_progress(tasks: builtins.list[WorkerTask], text: str) -> builtins.list[WorkerTask]:
    """``tasks`` with the progress of ``progress_text`` put back (bounds re-applied)."""
    out = list(tasks)
    try:
        entries = parse_untrusted(text or "[]")
    except ValueError:
        return out
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int):
            i = entry[0]
            if 0 <= i < len(out):
                out[i] = replace(out[i], progress=TaskProgress.from_json(entry[1]))
    return out


def incarnations_text(tasks: builtins.list[WorkerTask]) -> str:
    """The tasks' incarnations as compact JSON, in task order (``null`` where unknown)."""
    return json.dumps([t.incarnation for t in tasks], separators=(",", ":"))


def with_incarnations(tasks: builtins.list[WorkerTask], text: str) -> builtins.list[WorkerTask]:
    """``tasks`` with the incarnations of ``incarnations_text`` put back (a value that is not a
    counter is left out: an older record has none)."""
    try:
        values = parse_untrusted(text or "[]")
    except ValueError:
        return list(tasks)
    values = values if isinstance(values, list) else []
    out = list(tasks)
    for i, value in enumerate(values[: len(out)]):
        if type(value) is int and 1 <= value <= MAX_COUNTER:
            out[i] = replace(out[i], incarnation=value)
    return out


def finite(value: Any, high: float) -> float:
    """``value`` as a finite float in [0, ``high``]; ValueError (OverflowError included) else."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    number = float(value)
    if not math.isfinite(number) or not 0 <= number <= high:
        raise ValueError(f"{str(value)[:40]!r} is out of range")
    return number


def gpus_text(gpus: builtins.list[GpuUse]) -> str:
    """GPU samples as compact JSON ``[[index, utilization, used MiB, total MiB], ...]``."""
    rows = [[g.index, g.utilization, g.memory_used_mib, g.memory_total_mib] for g in gpus]
    return json.dumps(rows[:MAX_GPUS], separators=(",", ":"))


def gpus_from_text(text: str) -> builtins.list[GpuUse]:
    """``gpus_text`` read back; malformed rows are left out."""
    try:
        rows = parse_untrusted(text or "[]")
    except ValueError:
        return []
    out: builtins.list[GpuUse] = []
    for row in rows[:MAX_GPUS] if isinstance(rows, list) else []:
        try:
            index, util, used, total = row
            out.append(GpuUse(int(index), finite(util, 100), finite(used, 1e9), finite(total, 1e9)))
        except (TypeError, ValueError, OverflowError):
            continue
    return out


@dataclass(frozen=True)
class WorkerRecord:
    """One worker agent's latest heartbeat."""

    worker_id: str
    host: str
    queues: list[str]
    slots: int
    busy_slots: int
    tasks: list[WorkerTask]
    version: str
    started_at: float
    last_seen: float
    """The worker's own clock at its latest heartbeat."""
    interval_s: float
    busy_s: float = 0.0
    """Busy slot-seconds since the worker started (its slots' run time, summed): with ``slots``
    and ``started_at``, the worker's utilisation (``dagq workers --utilization``)."""
    """How often this worker writes its heartbeat."""
    gpus: list[GpuUse] = field(default_factory=list)
    """Its GPUs' use at the latest heartbeat (empty where ``nvidia-smi`` is absent)."""
    live_errors: int = 0
    """Failed reads of its running tasks' progress files since it started (a task's doing: the
    attempt went on)."""
    server_seen: float | None = field(default=None, compare=False)
    """The storage service's time of the latest heartbeat (read back, never written)."""
    row_key: str | None = field(default=None, compare=False)
    """The key the record was read back under (never written): a forged row's key need not be
    its ``worker_id``'s, so it is removed by this one."""


@dataclass(frozen=True)
class FailureNote:
    """A storage failure a component tolerated, kept where ``dagq doctor`` reads it
    (``shared.storage.tolerated``)."""

    source: str
    """Who failed: ``app``, or ``worker <id>``."""
    kind: str
    """What failed (``shared.storage.tolerated.Kind``: ``cache record``...)."""
    count: int
    """Failures of this kind in that process so far."""
    detail: str
    """The latest one in a few words (``403 AuthorizationPermissionMismatch``)."""
    at: float
    """When the note was written (the writer's clock)."""


MAX_NOTE_TEXT = 200
"""Longest source, kind or detail a failure note keeps."""


def bounded_note(note: FailureNote) -> FailureNote:
    """``note`` as stored: its texts cut to ``MAX_NOTE_TEXT``, its count non-negative."""
    return FailureNote(
        note.source[:MAX_NOTE_TEXT],
        note.kind[:MAX_NOTE_TEXT],
        max(0, int(note.count)),
        note.detail[:MAX_NOTE_TEXT],
        finite(note.at, 1e12),
    )


class Registry(Protocol):
    """Worker heartbeats, queues ever polled, and when recurring jobs last ran."""

    async def beat(self, record: WorkerRecord) -> None:
        """Create or replace a worker's record."""
        ...

    async def remove(self, worker_id: str, *, row_key: str | None = None) -> None:
        """Remove a worker's record (no error if it is gone already); ``row_key``: the key it
        was read under, used instead of the one ``worker_id`` makes."""
        ...

    async def workers(self) -> builtins.list[WorkerRecord]:
        """Every worker record, alive or not, with ``server_seen`` filled in."""
        ...

    async def note_queues(self, queues: builtins.list[str], at: float) -> None:
        """Record that a worker polls these queues (as named in definitions)."""
        ...

    async def queues(self) -> dict[str, float]:
        """Every queue any worker ever polled -> when that was last noted."""
        ...

    async def note_failure(self, note: FailureNote) -> None:
        """Create or replace the note of ``note.source``'s failures of ``note.kind``."""
        ...

    async def failures(self) -> builtins.list[FailureNote]:
        """Every failure note (bounded like every registry read)."""
        ...

    async def note_machine(self, life: MachineLife) -> None:
        """Create or replace the row of ``life``'s machine boot (``shared.storage.machines``)."""
        ...

    async def machines(self, since: float, until: float) -> builtins.list[MachineLife]:
        """The machine lives that overlap [``since``, ``until``] (bounded like every registry
        read; a row it cannot read is skipped)."""
        ...
