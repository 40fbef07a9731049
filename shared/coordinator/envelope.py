"""An event on its way through a pass, with where it came from (so it can be acknowledged)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.messages import Event
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
        """The envelope of a message received from ``source``."""
        return cls(
            text=message.text,
            message_id=message.id,
            dequeue_count=message.dequeue_count,
            message=message,
            source=source,
        )
