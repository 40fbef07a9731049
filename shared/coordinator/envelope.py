"""An event on its way through a pass, with where it came from (so it can be acknowledged)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.messages import Event, unwrap_redelivery
from shared.storage.ports import Queue, ReceivedMessage


@dataclass
class Envelope:
    """One event message in a pass: its text, its delivery count and, once decoded, its event."""

    text: str
    message_id: str
    dequeue_count: int
    message: ReceivedMessage | None = None
    """None for the Functions trigger message (the host deletes it) and for sweep events."""
    source: Queue | None = None
    event: Event | None = None
    deferred: bool = False
    """Left unacknowledged because it reports an attempt of a rerun the state has not applied
    yet (``engine.premature``): it comes back after its visibility timeout."""

    @classmethod
    def received(cls, message: ReceivedMessage, source: Queue) -> Envelope:
        """The envelope of a message received from ``source`` (a redelivery is unwrapped: its
        earlier deliveries count)."""
        text, earlier = unwrap_redelivery(message.text)
        return cls(
            text=text,
            message_id=message.id,
            dequeue_count=earlier + message.dequeue_count,
            message=message,
            source=source,
        )

    @classmethod
    def trigger(cls, text: str, message_id: str, dequeue_count: int) -> Envelope:
        """The envelope of a message the Functions host handed over (the host deletes it)."""
        original, earlier = unwrap_redelivery(text)
        return cls(text=original, message_id=message_id, dequeue_count=earlier + dequeue_count)
