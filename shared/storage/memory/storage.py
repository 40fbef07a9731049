"""Every in-memory adapter together: ``MemoryStorage`` and ``memory_storage``, sharing one clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from shared.names import ResourceNames
from shared.storage.memory.blobs import (
    MemoryContainer,
    MemoryDeadLetters,
    MemoryOutputBlobs,
    MemoryWorkflowBlobs,
)
from shared.storage.memory.cache import MemoryResultCache
from shared.storage.memory.clock import Clock
from shared.storage.memory.index import MemoryIndex
from shared.storage.memory.lease import MemoryLease
from shared.storage.memory.queues import MemoryQueue, MemoryQueues
from shared.storage.memory.registry import MemoryRegistry
from shared.storage.memory.schedules import MemorySchedules
from shared.storage.ports import Storage


@dataclass(frozen=True)
class MemoryStorage(Storage):
    """A Storage whose fields have their concrete in-memory types, so tests can look inside
    (``storage.queues.states``, ``storage.workflows.container.blobs``, ``storage.lease``)."""

    workflows: MemoryWorkflowBlobs
    outputs: MemoryOutputBlobs
    deadletters: MemoryDeadLetters
    lease: MemoryLease
    queues: MemoryQueues
    index: MemoryIndex
    event_queue: MemoryQueue
    event_poison_queue: MemoryQueue
    registry: MemoryRegistry
    cache: MemoryResultCache
    schedules: MemorySchedules
    names: ResourceNames = field(kw_only=True)
    leases: dict[int, MemoryLease] = field(kw_only=True, hash=False, compare=False)
    """Every partition's lease, shared by all views of this storage."""

    def for_partition(self, partition: int) -> MemoryStorage:
        """This storage with ``partition``'s event queue, poison queue and lease."""
        if partition == self.partition:
            return self
        lease = self.leases.get(partition)
        if lease is None:
            lease = self.leases[partition] = MemoryLease(self.lease.clock)
        return replace(
            self,
            lease=lease,
            event_queue=self.queues.get(self.names.partition_event_queue(partition)),
            event_poison_queue=self.queues.get(self.names.partition_poison_queue(partition)),
            partition=partition,
        )


def memory_storage(prefix: str = "mem", clock: Clock = time.time) -> MemoryStorage:
    """A fresh in-memory Storage for ``prefix``: every adapter, sharing one clock.

    Each call has its own state; share one instance between components that must see each other
    (two coordinators contending for the lease, an API and a coordinator).
    """
    names = ResourceNames(prefix)
    queues = MemoryQueues(clock)
    lease = MemoryLease(clock)
    return MemoryStorage(
        workflows=MemoryWorkflowBlobs(MemoryContainer(names.workflows_container)),
        outputs=MemoryOutputBlobs(MemoryContainer(names.outputs_container)),
        deadletters=MemoryDeadLetters(MemoryContainer(names.deadletter_container)),
        lease=lease,
        queues=queues,
        index=MemoryIndex(),
        event_queue=queues.get(names.event_queue),
        event_poison_queue=queues.get(names.event_poison_queue),
        registry=MemoryRegistry(clock),
        cache=MemoryResultCache(),
        schedules=MemorySchedules(),
        names=names,
        leases={0: lease},
    )
