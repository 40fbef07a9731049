"""The queue ports: one Azure Storage queue, and the queues of an account (``shared.storage.ports``
re-exports them with the other ports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ReceivedMessage:
    """A message received from a queue: invisible to others until its visibility timeout ends."""

    id: str
    pop_receipt: str
    text: str
    dequeue_count: int
    inserted_at: float | None = None


class Queue(Protocol):
    """One Azure Storage queue. Messages are plain text (dagq's JSON; see shared.messages)."""

    name: str

    async def ensure(self) -> None:
        """Create the queue if it does not exist."""
        ...

    async def send(self, text: str, *, delay_s: float = 0.0) -> None:
        """Send a message, invisible for ``delay_s`` seconds first (retry backoff). Messages never
        expire."""
        ...

    async def receive(self, max_messages: int, visibility_s: int) -> list[ReceivedMessage]:
        """Receive up to ``max_messages`` (1-32 per service call; more means several calls)."""
        ...

    async def delete(self, message: ReceivedMessage) -> bool:
        """Delete a received message. False (no error) if it was already gone or its pop receipt
        is stale (another consumer took it: 404 on Azure, 400 PopReceiptMismatch on Azurite)."""
        ...

    async def extend(self, message: ReceivedMessage, visibility_s: int) -> ReceivedMessage | None:
        """Make the message invisible for ``visibility_s`` more seconds (0: visible at once);
        return it with its NEW pop receipt, or None if the receipt is stale."""
        ...

    async def approximate_count(self) -> int:
        """Approximate number of messages in the queue (visible or not)."""
        ...

    async def oldest_visible_at(self) -> float | None:
        """When the first visible message was inserted (a peek), or None if none is visible."""
        ...


class Queues(Protocol):
    """Access to the queues of one storage account, by Azure queue name."""

    def get(self, azure_name: str) -> Queue:
        """A handle on a queue (no I/O)."""
        ...

    async def list_names(self, prefix: str) -> list[str]:
        """Names of existing queues starting with ``prefix``."""
        ...
