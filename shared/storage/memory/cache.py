"""The result cache in memory (``shared.storage.ports.ResultCache``), for tests; the same contract
tests run against it and the Azure adapter."""

from __future__ import annotations

import builtins

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

    async def expired(self, now: float, limit: int = 1000) -> builtins.list[str]:
        keys = sorted(key for key, (_, expires) in self.entries.items() if expires < now)
        return keys[: max(limit, 0)]

    async def delete(self, key: str) -> None:
        self.entries.pop(key, None)
