"""open_storage / ensure_resources against Azurite, configured the way processes are: from env."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.settings import Settings
from shared.storage import AzureStorage, ensure_resources, open_storage


async def test_open_storage_from_environment(
    storage_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in storage_env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()  # type: ignore[call-arg]  # read from the environment, as processes do
    async with open_storage(settings) as storage:
        assert isinstance(storage, AzureStorage)
        await ensure_resources(storage)
        await ensure_resources(storage)  # idempotent
        names = settings.names
        assert storage.event_queue.name == names.event_queue
        assert await storage.queues.list_names(names.event_queue) == [
            names.event_queue,
            names.event_poison_queue,
        ]
        containers = [c.name async for c in storage.clients.blob.list_containers()]
        assert set(names.all_containers()) <= set(containers)
        await storage.workflows.create_state("wf1", b"s", {"status": "pending"})

    # A second Storage (another process) sees what the first wrote.
    async with open_storage(settings) as again:
        assert (await again.workflows.state_metadata("wf1"))["status"] == "pending"


async def test_missing_resources_say_what_to_do(settings: Settings) -> None:
    async with open_storage(settings) as storage:
        with pytest.raises(ConfigError, match="ensure_resources"):
            await storage.workflows.read_state("wf1")
        with pytest.raises(ConfigError, match="ensure_resources"):
            await storage.index.get("wf1", 1.0)
        # Reading a task queue nobody created yet is just empty.
        assert await storage.queues.get(settings.names.task_queue("gpu")).receive(1, 5) == []


async def test_managed_identity_settings_address_the_account_uris() -> None:
    settings = Settings.model_validate(
        {"DAGQ_STORAGE__accountName": "acct", "DAGQ_STORAGE__clientId": "cid", "DAGQ_PREFIX": "p1"}
    )
    async with open_storage(settings) as storage:  # no I/O until the first operation
        assert storage.clients.blob.url.startswith("https://acct.blob.core.windows.net")
        assert storage.clients.queue.url.startswith("https://acct.queue.core.windows.net")
        assert storage.clients.table.url.startswith("https://acct.table.core.windows.net")
        assert storage.event_queue.name == "p1-events"
