"""The storage fixtures, registered once for the whole suite (``pytest_plugins`` in
tests/conftest.py); each name means one thing in every folder:

- ``storage``: the storage contract's fixture, one test per backend: the in-memory fakes, Azurite,
  and Azurite behind a proxy that breaks connections (``azurite-lossy``: every 11th request closed
  before it reaches Azurite, every 13th after Azurite acted on it; the adapters repeat them);
- ``memory_storage``: the in-memory storage alone, whose visibility timeouts and leases follow
  ``clock``, a fake clock the test moves on by hand (the coordinator's, the result cache's and the
  notices' tests);
- ``azure_storage``: the session's Azurite alone, resources ensured (the worker's tests).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from devtools.testing.flaky_proxy import FlakyProxy
from shared.settings import Settings, azurite_connection_string
from tests.support.clock import FakeClock

if TYPE_CHECKING:  # the storage adapters load when a test takes them, not with the plugin
    from shared.storage.azure import AzureStorage
    from shared.storage.memory import MemoryStorage
    from shared.storage.ports import Storage


@pytest.fixture
def clock() -> FakeClock:
    """The fake clock ``memory_storage`` follows."""
    return FakeClock()


@pytest.fixture
def memory_storage(clock: FakeClock) -> MemoryStorage:
    """In-memory storage (prefix ``mem``) on the fake ``clock``."""
    from shared.storage.memory import memory_storage as open_memory_storage

    return open_memory_storage("mem", clock=clock)


@pytest.fixture
async def azure_storage(settings: Settings) -> AsyncIterator[AzureStorage]:
    """Storage on the session's Azurite with this test's prefix, its resources ensured."""
    from shared.storage.azure import AzureStorage
    from shared.storage.factory import ensure_resources, open_storage

    async with open_storage(settings) as opened:
        assert isinstance(opened, AzureStorage)
        await ensure_resources(opened)
        yield opened


@pytest.fixture(params=["memory", "azurite", "azurite-lossy"])
async def storage(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Storage]:
    """A Storage with its resources ensured: in memory, or on the session's Azurite."""
    if request.param == "memory":
        from shared.storage.memory import memory_storage as open_memory_storage

        yield open_memory_storage(prefix)
        return
    from shared.storage.factory import ensure_resources, open_storage

    settings: Settings = request.getfixturevalue("settings")
    proxies: list[FlakyProxy] = []
    if request.param == "azurite-lossy":
        azurite = request.getfixturevalue("azurite")
        proxies = [
            FlakyProxy("127.0.0.1", azurite.bound[service], every_before=11,
                       every_after=0 if service == "queue" else 13).start()
            for service in ("blob", "queue", "table")
        ]  # fmt: skip
        blob, queue, table = (proxy.port for proxy in proxies)
        conn = azurite_connection_string(blob=blob, queue=queue, table=table, key=azurite.key)
        settings = Settings.model_validate({"DAGQ_STORAGE": conn, "DAGQ_PREFIX": prefix})
    try:
        async with open_storage(settings) as opened:
            await ensure_resources(opened)
            yield opened
    finally:
        for proxy in proxies:
            proxy.stop()
