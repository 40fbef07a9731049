"""The storage contract's ``storage`` fixture (tests/storage and tests/ops take it from here):
the same contract tests run against the in-memory fakes, Azurite, and Azurite behind a proxy that
breaks connections (``azurite-lossy``: every 11th request closed
before it reaches Azurite, every 13th after Azurite acted on it; the adapters repeat them)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from devtools.testing.flaky_proxy import FlakyProxy
from shared.settings import Settings, azurite_connection_string
from shared.storage.ports import Storage


@pytest.fixture(params=["memory", "azurite", "azurite-lossy"])
async def storage(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Storage]:
    """A Storage with its resources ensured: in memory, or on the session's Azurite."""
    if request.param == "memory":
        from shared.storage.memory import memory_storage

        yield memory_storage(prefix)
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
