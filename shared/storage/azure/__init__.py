"""The storage ports on Azure Storage (the async Azure SDKs; Azurite locally).

One module per service and job: ``clients`` (the account's service clients), ``retry`` (the
repeat of lost connections), ``blobs`` (workflow definitions and states, outputs),
``deadletters``, ``cache`` (the result cache), ``lease`` (a partition's coordinator lease),
``queues``, ``index`` (the workflow index table) and ``registry`` (the workers' registry);
``storage`` holds the bundle (``AzureStorage``), which ``shared.storage.factory.open_storage``
opens from Settings.
"""

from shared.storage.azure.blobs import AzureOutputBlobs, AzureWorkflowBlobs
from shared.storage.azure.clients import AzureClients
from shared.storage.azure.deadletters import AzureDeadLetters
from shared.storage.azure.index import AzureIndex
from shared.storage.azure.lease import AzureLease
from shared.storage.azure.queues import AzureQueue, AzureQueues
from shared.storage.azure.registry import AzureRegistry
from shared.storage.azure.storage import AzureStorage, azure_storage

__all__ = [
    "AzureClients",
    "AzureDeadLetters",
    "AzureIndex",
    "AzureLease",
    "AzureOutputBlobs",
    "AzureQueue",
    "AzureQueues",
    "AzureRegistry",
    "AzureStorage",
    "AzureWorkflowBlobs",
    "azure_storage",
]
