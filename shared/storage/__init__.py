"""The storage shell: the interfaces dagq's logic is written against, and their adapters.

- ``shared.storage.ports`` (and ``registry``, the workers' registry): the interfaces, one method per
  storage operation; ``encoding``: how the adapters store what is not a codec's business;
- ``shared.storage.azure``: the adapters over Azure Storage (async Azure SDKs; Azurite locally);
  ``shared.storage.factory.open_storage`` opens them from Settings;
- ``shared.storage.memory``: the same interfaces in memory, for fast tests (the contract tests in
  ``tests/storage/`` run against both);
- ``shared.storage.modelled``: any Storage slowed to Azure's modelled latencies and limits (bench).

A workflow read back and decoded is the room above, ``shared.readback``.

Every name here is imported on first use (PEP 562): the worker reads the ports without paying for
an adapter, and the Functions app starts without the Azure storage SDKs (its cold-start budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.storage.azure import AzureStorage, azure_storage
    from shared.storage.factory import ensure_resources, open_storage
    from shared.storage.memory import MemoryStorage, memory_storage
    from shared.storage.modelled import AzureModel, ModelledStorage, StorageModel
    from shared.storage.ports import (
        DeadLetter,
        DeadLetters,
        Index,
        IndexPage,
        IndexRow,
        Lease,
        OutputBlobs,
        Queue,
        Queues,
        ReceivedMessage,
        Storage,
        WorkflowBlobs,
    )
    from shared.storage.registry import Registry, WorkerRecord, WorkerTask

__all__ = [
    "AzureModel",
    "AzureStorage",
    "DeadLetter",
    "DeadLetters",
    "Index",
    "IndexPage",
    "IndexRow",
    "Lease",
    "MemoryStorage",
    "ModelledStorage",
    "OutputBlobs",
    "Queue",
    "Queues",
    "ReceivedMessage",
    "Registry",
    "Storage",
    "StorageModel",
    "WorkerRecord",
    "WorkerTask",
    "WorkflowBlobs",
    "azure_storage",
    "ensure_resources",
    "memory_storage",
    "open_storage",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.storage.ports": (
            "DeadLetter",
            "DeadLetters",
            "Index",
            "IndexPage",
            "IndexRow",
            "Lease",
            "OutputBlobs",
            "Queue",
            "Queues",
            "ReceivedMessage",
            "Storage",
            "WorkflowBlobs",
        ),
        "shared.storage.registry": ("Registry", "WorkerRecord", "WorkerTask"),
        "shared.storage.azure": ("AzureStorage", "azure_storage"),
        "shared.storage.factory": ("ensure_resources", "open_storage"),
        "shared.storage.memory": ("MemoryStorage", "memory_storage"),
        # Not the function ``modelled``: once its module is imported, ``shared.storage.modelled``
        # is the module (import it from there).
        "shared.storage.modelled": ("AzureModel", "ModelledStorage", "StorageModel"),
    },
)
