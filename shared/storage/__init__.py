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

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.storage.azure import AzureStorage as AzureStorage
    from shared.storage.azure import azure_storage as azure_storage
    from shared.storage.factory import (
        ensure_resources as ensure_resources,
    )
    from shared.storage.factory import (
        open_storage as open_storage,
    )
    from shared.storage.memory import (
        MemoryStorage as MemoryStorage,
    )
    from shared.storage.memory import (
        memory_storage as memory_storage,
    )
    from shared.storage.modelled import (
        AzureModel as AzureModel,
    )
    from shared.storage.modelled import (
        ModelledStorage as ModelledStorage,
    )
    from shared.storage.modelled import (
        StorageModel as StorageModel,
    )
    from shared.storage.ports import (
        DeadLetter as DeadLetter,
    )
    from shared.storage.ports import (
        DeadLetters as DeadLetters,
    )
    from shared.storage.ports import (
        Index as Index,
    )
    from shared.storage.ports import (
        IndexPage as IndexPage,
    )
    from shared.storage.ports import (
        IndexRow as IndexRow,
    )
    from shared.storage.ports import (
        Lease as Lease,
    )
    from shared.storage.ports import (
        OutputBlobs as OutputBlobs,
    )
    from shared.storage.ports import (
        Queue as Queue,
    )
    from shared.storage.ports import (
        Queues as Queues,
    )
    from shared.storage.ports import (
        ReceivedMessage as ReceivedMessage,
    )
    from shared.storage.ports import (
        Storage as Storage,
    )
    from shared.storage.ports import (
        WorkflowBlobs as WorkflowBlobs,
    )
    from shared.storage.registry import (
        Registry as Registry,
    )
    from shared.storage.registry import (
        WorkerRecord as WorkerRecord,
    )
    from shared.storage.registry import (
        WorkerTask as WorkerTask,
    )

__all__, __getattr__ = lazy_face(__name__, __file__)
