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

from azure.core.exceptions import ResourceExistsError

from shared.settings import Settings
from shared.storage.azure.storage import AzureStorage, azure_storage
from shared.storage.ports import Storage


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
        storage.clients.table.create_table_if_not_exists(storage.names.registry_table),
    )
    await asyncio.gather(
        *(view.lease.ensure_sentinel() for view in views if isinstance(view, AzureStorage))
    )


__all__ = ["ensure_resources", "open_storage"]
