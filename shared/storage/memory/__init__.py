"""Every storage port in memory, faithful to Azure Storage's semantics, for fast tests.

``memory_storage(prefix, clock)`` builds a ``MemoryStorage`` (every adapter, sharing one clock);
``tests/storage/`` runs the same contract tests against it and the Azure adapters. Nothing here
imports an Azure SDK.
"""

from shared.storage.memory.registry import MemoryRegistry
from shared.storage.memory.storage import (
    MemoryContainer,
    MemoryDeadLetters,
    MemoryIndex,
    MemoryLease,
    MemoryOutputBlobs,
    MemoryQueue,
    MemoryQueues,
    MemoryStorage,
    MemoryWorkflowBlobs,
    memory_storage,
)

__all__ = [
    "MemoryContainer",
    "MemoryDeadLetters",
    "MemoryIndex",
    "MemoryLease",
    "MemoryOutputBlobs",
    "MemoryQueue",
    "MemoryQueues",
    "MemoryRegistry",
    "MemoryStorage",
    "MemoryWorkflowBlobs",
    "memory_storage",
]
