"""The Azurite fixture starts a real emulator that the Azure SDK can talk to."""

from __future__ import annotations

from azure.storage.queue.aio import QueueServiceClient

from shared.settings import Settings


async def test_azurite_accepts_sdk_calls(settings: Settings) -> None:
    assert settings.storage_connection_string is not None
    async with QueueServiceClient.from_connection_string(settings.storage_connection_string) as svc:
        queue = svc.get_queue_client(settings.names.event_queue)
        await queue.create_queue()
        await queue.send_message("hello")
        received = [m async for m in queue.receive_messages(max_messages=1)]
        assert [m.content for m in received] == ["hello"]
