"""The result cache in memory (``shared.storage.ports.ResultCache``), for tests; the same contract
tests run against it and the Azure adapter."""

from __future__ import annotations

import builtins

from shared.limits import CACHE_SCAN
from shared.names import ResourceNames


class MemoryResultCache:
    """ResultCache over a dict: key -> (bytes, expiry)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[bytes, float]] = {}

    async def get(self, key: str) -> bytes | None:
        ResourceNames.cache_entry_blob(key)  # the same key check as the blob name
        entry = self.entries.get(key)
        return None if entry is None else entry[0]

    async def put(self, key: str, data: bytes, expires_at: float) -> None:
        ResourceNames.cache_entry_blob(key)
        self.entries[key] = (bytes(data), expires_at)

    async def expired(
        self, now: float, limit: int = 1000, *, start: int = 0, scan: int = CACHE_SCAN
    ) -> builtins.list[str]:
        # The Azure adapter's order: key prefixes from ``start`` on, keys in order within each.
        order = {prefix: i for i, prefix in enumerate(ResourceNames.cache_prefixes(start))}
        listed = sorted(self.entries, key=lambda k: (order[k[:2] + "/"], k))[: max(scan, 0)]
        return [k for k in listed if self.entries[k][1] < now][: max(limit, 0)]

    async def delete(self, key: str) -> None:
        self.entries.pop(key, None)
