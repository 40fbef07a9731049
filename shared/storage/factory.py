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

from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.azure.storage import AzureStorage, azure_storage
from shared.storage.ports import Storage
from shared.storage.rbac.guard import GuardedStorage, guarded
from shared.storage.rbac.model import Target
from shared.storage.rbac.operations import CREATE_BLOB, CREATE_CONTAINER, CREATE_TABLE
from shared.storage.rbac.usage import UsageLog


@asynccontextmanager
async def open_storage(settings: Settings, identity: str | None = None) -> AsyncIterator[Storage]:
    """The deployment's Storage on Azure (connection string, or DefaultAzureCredential), its
    clients closed on exit.

    ``identity`` names who the caller is in infra/'s role assignments (``app``: the API, the
    coordinator and the sweeps; ``worker``: the worker agent). With ``settings.rbac_enforce``,
    every call is checked against that identity's roles first and refused as Azure would refuse
    it (``shared.storage.rbac``); without an identity (tests' own setup, tools) nothing is.
    """
    storage = azure_storage(settings)
    try:
        yield with_identity(storage, settings, identity)
    finally:
        await storage.clients.close()


def with_identity(storage: Storage, settings: Settings, identity: str | None) -> Storage:
    """``storage`` as ``identity`` may use it when ``settings.rbac_enforce`` is on; else itself."""
    if identity is None or not settings.rbac_enforce:
        return storage
    usage = UsageLog(settings.rbac_usage) if settings.rbac_usage else None
    return guarded(storage, identity, settings.names, usage=usage)


async def ensure_resources(
    storage: Storage, partitions: int = 1, names: ResourceNames | None = None
) -> None:
    """Make sure the containers, the index table, and each of the first ``partitions``
    partitions' event queue, poison queue (and lease sentinel) exist. Idempotent; in Azure the
    Bicep templates create them too."""
    views = [storage.for_partition(p) for p in range(partitions)]
    await asyncio.gather(
        *(queue.ensure() for view in views for queue in (view.event_queue, view.event_poison_queue))
    )
    if names is not None:  # the notify queue (issue 29): its trigger listens from the start
        notify = (names.notify_queue, names.notify_poison_queue)
        await asyncio.gather(*(storage.queues.get(name).ensure() for name in notify))
    if isinstance(storage, GuardedStorage):
        _check_deployment(storage, partitions)
        storage = storage.inner
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
        storage.clients.table.create_table_if_not_exists(storage.names.schedules_table),
    )
    await asyncio.gather(
        *(view.lease.ensure_sentinel() for view in views if isinstance(view, AzureStorage))
    )


def _check_deployment(storage: GuardedStorage, partitions: int) -> None:
    """What ``ensure_resources`` creates, checked for the guarded identity (the creates below
    bypass the port methods the guard watches)."""
    names, check = storage.guard.names, storage.guard.check
    for container in names.all_containers():
        check("deployment", "create_container", CREATE_CONTAINER, Target("blob", container))
    for table in (names.index_table, names.registry_table, names.schedules_table):
        check("deployment", "create_table", CREATE_TABLE, Target("table", table))
    for partition in range(partitions):
        lease = Target("blob", names.workflows_container, names.lease_blob(partition))
        check("deployment", "create_sentinel", CREATE_BLOB, lease)


__all__ = ["ensure_resources", "open_storage", "with_identity"]
