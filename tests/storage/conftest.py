"""The ``storage`` fixture: the same contract tests run against the in-memory fakes and Azurite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from shared.settings import Settings
from shared.storage.ports import Storage


@pytest.fixture(params=["memory", "azurite"])
async def storage(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Storage]:
    """A Storage with its resources ensured: in memory, or on the session's Azurite."""
    if request.param == "memory":
        from shared.storage.memory import memory_storage

        yield memory_storage(prefix)
        return
    from shared.storage.factory import ensure_resources, open_storage

    settings: Settings = request.getfixturevalue("settings")
    async with open_storage(settings) as opened:
        await ensure_resources(opened)
        yield opened
