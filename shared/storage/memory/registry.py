"""The registry in memory (``shared.storage.registry``), for tests; the same contract tests run
against it and the Azure adapter. ``server_seen`` is the fake service's clock at the write."""

from __future__ import annotations

import builtins
from dataclasses import replace

from shared.limits import MAX_RECORD_TASKS, MAX_REGISTRY_ROWS
from shared.storage.machines import MachineLife, bounded_life, machine_partition, partitions_between
from shared.storage.memory.clock import Clock
from shared.storage.registry import (
    FailureNote,
    WorkerRecord,
    WorkerTask,
    bounded_note,
    gpus_from_text,
    gpus_text,
    incarnations_text,
    progress_text,
    with_incarnations,
    with_progress,
)


class MemoryRegistry:
    """Registry over dicts; ``clock`` plays the storage service's clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.records: dict[str, WorkerRecord] = {}
        self.queue_notes: dict[str, float] = {}
        self.failure_notes: dict[tuple[str, str], FailureNote] = {}
        self.machine_lives: dict[tuple[str, str], MachineLife] = {}

    async def beat(self, record: WorkerRecord) -> None:
        # Through the Azure adapter's encodings, so that the same bounds apply.
        tasks = [
            WorkerTask(t.workflow_id, t.task, t.attempt) for t in record.tasks[:MAX_RECORD_TASKS]
        ]
        tasks = with_progress(tasks, progress_text(record.tasks))
        tasks = with_incarnations(tasks, incarnations_text(record.tasks[:MAX_RECORD_TASKS]))
        stored = replace(
            record,
            queues=list(record.queues),
            tasks=tasks,
            gpus=gpus_from_text(gpus_text(record.gpus)),
            server_seen=self.clock(),
        )
        self.records[record.worker_id] = stored

    async def remove(self, worker_id: str, *, row_key: str | None = None) -> None:
        self.records.pop(worker_id if row_key is None else row_key, None)

    async def workers(self) -> builtins.list[WorkerRecord]:
        return [self.records[key] for key in sorted(self.records)[:MAX_REGISTRY_ROWS]]

    async def note_queues(self, queues: builtins.list[str], at: float) -> None:
        for queue in queues:
            self.queue_notes[queue] = at

    async def queues(self) -> dict[str, float]:
        return dict(self.queue_notes)

    async def note_failure(self, note: FailureNote) -> None:
        self.failure_notes[(note.source, note.kind)] = bounded_note(note)

    async def failures(self) -> builtins.list[FailureNote]:
        keys = sorted(self.failure_notes)[:MAX_REGISTRY_ROWS]
        return [self.failure_notes[key] for key in keys]

    async def note_machine(self, life: MachineLife) -> None:
        life = bounded_life(life)
        self.machine_lives[(machine_partition(life.booted_at), life.machine)] = life

    async def machines(self, since: float, until: float) -> builtins.list[MachineLife]:
        out: builtins.list[MachineLife] = []
        for partition in partitions_between(since, until):
            keys = sorted(k for k in self.machine_lives if k[0] == partition)[:MAX_REGISTRY_ROWS]
            out.extend(self.machine_lives[key] for key in keys)
        return [life for life in out if life.hours_within(since, until) > 0]
