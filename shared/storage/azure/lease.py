"""A partition's coordinator lease: a blob lease on a sentinel blob of the workflows container.

The sentinel (``ResourceNames.lease_blob(partition)``) is created on first use if absent. A second
acquire while the lease is held is a 409 (None here); renewing a lease that was broken or taken by
another holder is a 409 too (False here).
"""

from __future__ import annotations

import uuid

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import BlobClient, BlobLeaseClient, ContainerClient

from shared.names import ResourceNames
from shared.storage.azure.blobs import create_blob_if_absent
from shared.storage.azure.errors import raise_missing
from shared.storage.azure.retry import repeated
from shared.storage.repeat import call_state
from shared.storage.rules import check_lease_duration


def _lost(error: HttpResponseError) -> bool:
    """The lease is held by someone else, broken, or absent (409); or the blob vanished (404)."""
    return error.status_code in (404, 409, 412)


class AzureLease:
    """Lease over one partition's sentinel blob in the workflows container."""

    def __init__(self, container: ContainerClient, partition: int = 0) -> None:
        self.container = container
        self.blob_name = ResourceNames.lease_blob(partition)
        self.blob: BlobClient = container.get_blob_client(self.blob_name)

    @repeated
    async def ensure_sentinel(self) -> None:
        """Create the (empty) sentinel blob if it does not exist."""
        await create_blob_if_absent(
            self.container,
            self.blob_name,
            b"",
            content_settings=ContentSettings("application/octet-stream"),
        )

    @repeated
    async def acquire(self, duration_s: int) -> str | None:
        check_lease_duration(duration_s)
        # One proposed lease id for every try: a repeat of an acquire that took effect renews
        # our own lease instead of finding it held (409).
        state = call_state()
        lease_id = state["lease_id"] = state.get("lease_id") or str(uuid.uuid4())
        for _ in range(2):
            try:
                lease = BlobLeaseClient(self.blob, lease_id)
                await lease.acquire(lease_duration=duration_s)
            except ResourceNotFoundError as error:
                if getattr(error, "error_code", None) == "ContainerNotFound":
                    raise_missing(error, self.container.container_name, "lease sentinel")
                await self.ensure_sentinel()
                continue
            except HttpResponseError as error:
                if error.status_code == 409:
                    return None
                raise
            return str(lease.id)
        return None

    @repeated
    async def renew(self, lease_id: str) -> bool:
        try:
            await BlobLeaseClient(self.blob, lease_id).renew()
        except HttpResponseError as error:
            if _lost(error):
                return False
            raise
        return True

    @repeated
    async def release(self, lease_id: str) -> None:
        try:
            await BlobLeaseClient(self.blob, lease_id).release()
        except HttpResponseError as error:
            if not _lost(error):
                raise

    @repeated
    async def break_lease(self) -> None:
        try:
            await BlobLeaseClient(self.blob).break_lease(lease_break_period=0)
        except HttpResponseError as error:
            if not _lost(error):
                raise

    @repeated
    async def is_held(self) -> bool:
        try:
            properties = await self.blob.get_blob_properties()
        except ResourceNotFoundError:
            return False
        return str(properties.lease.state) == "leased"
