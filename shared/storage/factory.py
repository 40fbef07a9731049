"""Open the deployment's Storage on Azure (or Azurite) from Settings, and create its resources.

```python
async with open_storage(settings) as storage:
    await ensure_resources(storage)      # local setups and tests; Bicep creates them in Azure
    await storage.event_queue.send(...)
```
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field, replace

from azure.core.exceptions import ResourceExistsError

from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.azure.blobs import AzureDeadLetters, AzureOutputBlobs, AzureWorkflowBlobs
from shared.storage.azure.clients import AzureClients
from shared.storage.azure.index import AzureIndex
from shared.storage.azure.lease import AzureLease
from shared.storage.azure.queues import AzureQueue, AzureQueues
from shared.storage.azure.registry import AzureRegistry
from shared.storage.ports import Storage


@dataclass(frozen=True)
class AzureStorage(Storage):
    """A Storage on one Azure Storage account (or Azurite), with its clients and names."""

    workflows: AzureWorkflowBlobs
    outputs: AzureOutputBlobs
    deadletters: AzureDeadLetters
    lease: AzureLease
    queues: AzureQueues
    index: AzureIndex
    event_queue: AzureQueue
    event_poison_queue: AzureQueue
    registry: AzureRegistry
    clients: AzureClients = field(kw_only=True)
    names: ResourceNames = field(kw_only=True)

    def for_partition(self, partition: int) -> AzureStorage:
        """This storage with ``partition``'s event queue, poison queue and lease (no I/O)."""
        if partition == self.partition:
            return self
        return replace(
            self,
            lease=AzureLease(self.lease.container, partition),
            event_queue=self.queues.get(self.names.partition_event_queue(partition)),
            event_poison_queue=self.queues.get(self.names.partition_poison_queue(partition)),
            partition=partition,
        )


def azure_storage(settings: Settings, clients: AzureClients | None = None) -> AzureStorage:
    """A Storage over ``settings``' account. No I/O here: the SDK opens its HTTP sessions on the
    first request. Close with ``await storage.clients.close()`` (``open_storage`` does)."""
    clients = clients or AzureClients(settings)
    names = settings.names

    queues = AzureQueues(clients.queue)
    workflows = clients.blob.get_container_client(names.workflows_container)
    index = clients.table.get_table_client(names.index_table)
    return AzureStorage(
        workflows=AzureWorkflowBlobs(workflows),
        outputs=AzureOutputBlobs(clients.blob.get_container_client(names.outputs_container)),
        deadletters=AzureDeadLetters(clients.blob.get_container_client(names.deadletter_container)),
        lease=AzureLease(workflows),
        queues=queues,
        index=AzureIndex(index),
        event_queue=queues.get(names.event_queue),
        event_poison_queue=queues.get(names.event_poison_queue),
        registry=AzureRegistry(index),
        clients=clients,
        names=names,
    )


@asynccontextmanager
async def open_storage(settings: Settings) -> AsyncIterator[AzureStorage]:
    """The deployment's Storage on Azure (connection string, or DefaultAzureCredential), its
    clients closed on exit."""
    storage = azure_storage(settings)
    try:
        yield storage
    finally:
        await storage.clients.close()


async def ensure_resources(storage: Storage, partitions: int = 1) -> None:
    """Make sure the containers, the index table, and each of the first ``partitions``
    partitions' event queue, poison queue (and lease sentinel) exist. Idempotent; in Azure the
    Bicep templates create them too."""
    views = [storage.for_partition(p) for p in range(partitions)]
    await asyncio.gather(
        *(queue.ensure() for view in views for queue in (view.event_queue, view.event_poison_queue))
    )
    if not isinstance(storage, AzureStorage):
        return
    blob = storage.clients.blob

    async def container(name: str) -> None:
        with suppress(ResourceExistsError):
            await blob.create_container(name)

    await asyncio.gather(
        *(container(name) for name in storage.names.all_containers()),
        storage.clients.table.create_table_if_not_exists(storage.names.index_table),
    )
    await asyncio.gather(
        *(view.lease.ensure_sentinel() for view in views if isinstance(view, AzureStorage))
    )


__all__ = [
    "AzureStorage",
    "azure_storage",
    "ensure_resources",
    "open_storage",
]
