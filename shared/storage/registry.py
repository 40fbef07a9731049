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
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class WorkerTask:
    """One attempt a worker is running."""

    workflow_id: str
    task: str
    attempt: int


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
    """How often this worker writes its heartbeat."""
    server_seen: float | None = field(default=None, compare=False)
    """The storage service's time of the latest heartbeat (read back, never written)."""


class Registry(Protocol):
    """Worker heartbeats, queues ever polled, and when recurring jobs last ran."""

    async def beat(self, record: WorkerRecord) -> None:
        """Create or replace a worker's record."""
        ...

    async def remove(self, worker_id: str) -> None:
        """Remove a worker's record (no error if it is gone already)."""
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

    async def mark(self, job: str, at: float) -> None:
        """Record that the recurring job ``job`` (``sweep``) ran at ``at``."""
        ...

    async def marks(self) -> dict[str, float]:
        """Job name -> when it last ran."""
        ...
