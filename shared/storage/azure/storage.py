"""Every Azure adapter together: ``AzureStorage`` over one account's clients and names."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.azure.blobs import AzureOutputBlobs, AzureWorkflowBlobs
from shared.storage.azure.cache import AzureResultCache
from shared.storage.azure.clients import AzureClients
from shared.storage.azure.deadletters import AzureDeadLetters
from shared.storage.azure.index import AzureIndex
from shared.storage.azure.lease import AzureLease
from shared.storage.azure.queues import AzureQueue, AzureQueues
from shared.storage.azure.registry import AzureRegistry
from shared.storage.azure.schedules import AzureSchedules
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
    cache: AzureResultCache
    schedules: AzureSchedules
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
        registry=AzureRegistry(clients.table.get_table_client(names.registry_table)),
        cache=AzureResultCache(clients.blob.get_container_client(names.cache_container)),
        schedules=AzureSchedules(clients.table.get_table_client(names.schedules_table)),
        clients=clients,
        names=names,
    )
