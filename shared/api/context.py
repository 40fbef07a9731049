"""The app's process-wide resources, created on first use: settings, and one Storage bundle.

Nothing here runs at import time: the Functions host must be able to import ``function_app.py``
quickly (Flex Consumption allows 30 s for start-up) and without reaching storage. The first request
(or trigger) opens the storage clients and makes sure the containers, table and queues exist; later
invocations reuse them. The Python worker runs every async function on one event loop, which is
what lets the async clients be shared.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.settings import Settings
    from shared.storage.ports import Storage


class AppContext:
    """Lazily opened settings and storage, shared by the HTTP handlers and the triggers."""

    def __init__(self) -> None:
        self._settings: Settings | None = None
        self._storage: Storage | None = None
        self._stack: AsyncExitStack | None = None
        self._lock: asyncio.Lock | None = None

    @property
    def settings(self) -> Settings:
        """Settings from the environment (app settings); ConfigError if storage is unset."""
        if self._settings is None:
            from shared.settings import Settings

            self._settings = Settings()
        return self._settings

    async def storage(self) -> Storage:
        """The storage bundle, opened (and its resources ensured) on first use."""
        if self._storage is not None:
            return self._storage
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._storage is None:
                from shared.storage.factory import ensure_resources, open_storage

                stack = AsyncExitStack()
                try:
                    storage = await stack.enter_async_context(open_storage(self.settings, "app"))
                    await ensure_resources(storage, self.settings.partitions, self.settings.names)
                except BaseException:
                    await stack.aclose()
                    raise
                self._stack, self._storage = stack, storage
        return self._storage

    async def close(self) -> None:
        """Close the storage clients (the local host calls this on shutdown)."""
        stack, self._stack, self._storage = self._stack, None, None
        if stack is not None:
            await stack.aclose()


CONTEXT = AppContext()
"""The one context of this process."""
