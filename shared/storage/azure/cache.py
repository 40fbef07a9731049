"""The result cache on Azure Storage: the ``{prefix}-cache`` container, one blob per key
(``shared.names`` ``cache_entry_blob``), its expiry in the ``expires`` metadata so the purge
sweep finds expired entries from a listing without downloading them."""

from __future__ import annotations

import builtins

from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import ContainerClient

from shared.limits import CACHE_SCAN
from shared.names import ResourceNames
from shared.storage.azure.blobs import delete_if_present
from shared.storage.azure.errors import raise_missing
from shared.storage.azure.retry import repeated

_ENTRY = ContentSettings(content_type="application/octet-stream")


class AzureResultCache:
    """ResultCache in one container."""

    def __init__(self, container: ContainerClient) -> None:
        self.container = container

    @repeated
    async def get(self, key: str) -> bytes | None:
        name = ResourceNames.cache_entry_blob(key)
        try:
            downloader = await self.container.download_blob(name)
            return await downloader.readall()
        except ResourceNotFoundError as error:
            if getattr(error, "error_code", None) == "ContainerNotFound":
                raise_missing(error, self.container.container_name, f"blob {name!r}")
            return None

    @repeated
    async def put(self, key: str, data: bytes, expires_at: float) -> None:
        name = ResourceNames.cache_entry_blob(key)
        try:
            await self.container.upload_blob(
                name,
                data,
                overwrite=True,
                metadata={"expires": repr(float(expires_at))},
                content_settings=_ENTRY,
            )
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"blob {name!r}")

    @repeated
    async def expired(
        self, now: float, limit: int = 1000, *, start: int = 0, scan: int = CACHE_SCAN
    ) -> builtins.list[str]:
        found: list[str] = []
        listed = 0
        for prefix in ResourceNames.cache_prefixes(start):
            expired, seen = await self._scan(prefix, now, scan - listed)
            found += expired
            listed += seen
            if len(found) >= limit or listed >= scan:
                return found[: max(limit, 0)]
        return found

    @repeated
    async def _scan(self, prefix: str, now: float, most: int) -> tuple[builtins.list[str], int]:
        """The expired keys among the first ``most`` entries under ``prefix``, and how many
        were listed: one part of a scan, repeated on its own after a lost connection."""
        found: list[str] = []
        listed = 0
        pages = self.container.list_blobs(
            name_starts_with=prefix, include=["metadata"], results_per_page=min(max(most, 1), 5000)
        )
        async for blob in pages:
            listed += 1
            if _expired(blob.metadata, now):
                found.append(ResourceNames.cache_key_of_blob(blob.name))
            if listed >= most:
                break
        return found, listed

    @repeated
    async def delete(self, key: str) -> None:
        await delete_if_present(self.container, ResourceNames.cache_entry_blob(key))


def _expired(metadata: dict[str, str] | None, now: float) -> bool:
    try:
        return float((metadata or {}).get("expires", "inf")) < now
    except ValueError:  # not written by dagq: leave it alone
        return False
