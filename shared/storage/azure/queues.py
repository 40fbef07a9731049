"""Queue adapters on Azure Storage queues: the event queue, its poison queue and the task queues.

Messages are plain text (no base64 policy: the Functions host reads them with
``"messageEncoding": "none"``) and never expire. Task queues are created on demand: a send to a
queue that does not exist creates it and retries once; reads of a missing queue see it empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from datetime import UTC

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.queue import QueueMessage
from azure.storage.queue.aio import QueueClient, QueueServiceClient

from shared.limits import MAX_VISIBILITY_S
from shared.storage.azure.retry import repeated
from shared.storage.ports import ReceivedMessage
from shared.storage.rules import too_large

RECEIVE_BATCH = 32
"""Most messages one receive call returns (Azure's limit)."""


def _stale_receipt(error: HttpResponseError) -> bool:
    """A message already deleted (404 on Azure and Azurite) or taken by another consumer since
    (404 on Azure, 400 PopReceiptMismatch on Azurite)."""
    if isinstance(error, ResourceNotFoundError) or error.status_code == 404:
        return True
    return error.status_code == 400 and getattr(error, "error_code", None) == "PopReceiptMismatch"


def _seconds(value: float, least: int) -> int:
    return min(max(math.ceil(value), least), MAX_VISIBILITY_S)


class AzureQueue:
    """One Azure Storage queue."""

    def __init__(self, client: QueueClient) -> None:
        self.client = client
        self.name: str = client.queue_name
        self._ensured = False
        self._known = False
        """A send succeeded (or ensure ran): the queue exists, sends need not wait in line."""
        self._first_send = asyncio.Lock()

    @repeated
    async def ensure(self) -> None:
        if self._ensured:
            return
        with contextlib.suppress(ResourceExistsError):
            await self.client.create_queue()
        self._ensured = self._known = True

    @repeated
    async def send(self, text: str, *, delay_s: float = 0.0) -> None:
        delay = _seconds(delay_s, 0) or None
        try:
            if self._known:
                await self._send_creating(text, delay)
                return
            # Until one send succeeded, senders go one at a time, so a burst of dispatches to a
            # queue that does not exist yet makes one create call, not one per message.
            async with self._first_send:
                await self._send_creating(text, delay)
                self._known = True
        except HttpResponseError as error:
            if error.status_code == 413:
                raise too_large(self.name, text) from error
            raise

    async def _send_creating(self, text: str, delay: int | None) -> None:
        try:
            await self.client.send_message(text, visibility_timeout=delay, time_to_live=-1)
        except ResourceNotFoundError:
            # A task queue nobody has used yet: create it, then send once more. (Created only
            # when missing: a sender-only identity may not be allowed to create queues.)
            with contextlib.suppress(ResourceExistsError):
                await self.client.create_queue()
            await self.client.send_message(text, visibility_timeout=delay, time_to_live=-1)

    @repeated
    async def receive(self, max_messages: int, visibility_s: int) -> list[ReceivedMessage]:
        if max_messages <= 0:
            return []
        per_call = min(RECEIVE_BATCH, max_messages)
        pages = self.client.receive_messages(
            messages_per_page=per_call,
            max_messages=max_messages,
            visibility_timeout=_seconds(visibility_s, 1),
        ).by_page()
        received: list[ReceivedMessage] = []
        try:
            async for page in pages:
                batch = [self._received(message) async for message in page]
                received += batch
                # A short batch means the queue has no more visible messages: skip the call that
                # would only confirm it.
                if len(batch) < per_call or len(received) >= max_messages:
                    break
        except ResourceNotFoundError:
            return received
        return received

    @staticmethod
    def _received(message: QueueMessage) -> ReceivedMessage:
        inserted = message.inserted_on
        if inserted is not None and inserted.tzinfo is None:
            inserted = inserted.replace(tzinfo=UTC)  # the service speaks UTC
        return ReceivedMessage(
            id=message.id,
            pop_receipt=str(message.pop_receipt),
            text=str(message.content),
            dequeue_count=int(message.dequeue_count or 0),
            inserted_at=inserted.timestamp() if inserted else None,
        )

    @repeated
    async def delete(self, message: ReceivedMessage) -> bool:
        try:
            await self.client.delete_message(message.id, message.pop_receipt)
        except HttpResponseError as error:
            if _stale_receipt(error):
                return False
            raise
        return True

    @repeated
    async def extend(self, message: ReceivedMessage, visibility_s: int) -> ReceivedMessage | None:
        try:
            updated = await self.client.update_message(
                message.id,
                pop_receipt=message.pop_receipt,
                visibility_timeout=_seconds(visibility_s, 0),
            )
        except HttpResponseError as error:
            if _stale_receipt(error):
                return None
            raise
        return ReceivedMessage(
            id=message.id,
            pop_receipt=str(updated.pop_receipt),
            text=message.text,
            dequeue_count=message.dequeue_count,
            inserted_at=message.inserted_at,
        )

    @repeated
    async def approximate_count(self) -> int:
        try:
            properties = await self.client.get_queue_properties()
        except ResourceNotFoundError:
            return 0
        return int(properties.approximate_message_count or 0)

    @repeated
    async def oldest_visible_at(self) -> float | None:
        try:
            peeked = await self.client.peek_messages(max_messages=1)
        except ResourceNotFoundError:
            return None
        inserted = peeked[0].inserted_on if peeked else None
        return inserted.timestamp() if inserted is not None else None


class AzureQueues:
    """The queues of one account; ``get`` caches a handle per queue (and whether it exists)."""

    def __init__(self, service: QueueServiceClient) -> None:
        self.service = service
        self._handles: dict[str, AzureQueue] = {}

    def get(self, azure_name: str) -> AzureQueue:
        handle = self._handles.get(azure_name)
        if handle is None:
            handle = AzureQueue(self.service.get_queue_client(azure_name))
            self._handles[azure_name] = handle
        return handle

    @repeated
    async def list_names(self, prefix: str) -> list[str]:
        return sorted(
            [queue.name async for queue in self.service.list_queues(name_starts_with=prefix)]
        )
