"""An event on its way through a pass, with where it came from (so it can be acknowledged).

One message is one envelope, except a batch (``shared.messages.wrappers.EventBatch``): each of its
events gets an envelope of its own, and they share the message, which is deleted only once every
one of them is handled (``deletable``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.errors import MessageError
from shared.messages import Event
from shared.messages.wrappers import split_batch, unwrap_redelivery
from shared.storage.ports import Queue, ReceivedMessage


@dataclass(eq=False)
class Envelope:
    """One event in a pass: its text, its message's delivery count and, once decoded, the event."""

    text: str
    message_id: str
    """The message's id (``{id}#{n}`` for the n-th event of a batch: logs and dead letters)."""
    dequeue_count: int
    message: ReceivedMessage | None = None
    """None for the Functions trigger message (the host deletes it) and for sweep events."""
    source: Queue | None = None
    event: Event | None = None
    deferred: bool = False
    """Left unacknowledged because it reports an attempt of a rerun the state has not applied
    yet (``engine.premature``): it comes back after its visibility timeout."""
    whole: str | None = None
    """The whole message's text, for an event of a batch (None: the message is this event)."""
    parts: int = 1
    """How many events the message carries."""
    malformed: str | None = None
    """Why the message cannot be taken apart (a batch that is not a valid one): dead-lettered."""

    @property
    def message_text(self) -> str:
        """The text of the whole message this event came in."""
        return self.whole if self.whole is not None else self.text

    @classmethod
    def received(cls, message: ReceivedMessage, source: Queue) -> list[Envelope]:
        """The envelopes of a message received from ``source`` (a redelivery is unwrapped: its
        earlier deliveries count)."""
        text, earlier = unwrap_redelivery(message.text)
        return cls._split(text, message.id, earlier + message.dequeue_count, message, source)

    @classmethod
    def trigger(cls, text: str, message_id: str, dequeue_count: int) -> list[Envelope]:
        """The envelopes of a message the Functions host handed over (the host deletes it)."""
        original, earlier = unwrap_redelivery(text)
        return cls._split(original, message_id, earlier + dequeue_count, None, None)

    @classmethod
    def _split(
        cls,
        text: str,
        message_id: str,
        dequeue_count: int,
        message: ReceivedMessage | None,
        source: Queue | None,
    ) -> list[Envelope]:
        try:
            events = split_batch(text)
        except MessageError as exc:
            return [cls(text, message_id, dequeue_count, message, source, malformed=str(exc))]
        if events is None:
            return [cls(text, message_id, dequeue_count, message, source)]
        return [
            cls(event, f"{message_id}#{n}", dequeue_count, message, source, whole=text,
                parts=len(events))
            for n, event in enumerate(events, 1)
        ]  # fmt: skip


def deletable(done: Iterable[Envelope]) -> list[Envelope]:
    """Of the handled envelopes, one per received message all of whose events are among them:
    the messages that may be deleted now. (A batch with an event not handled yet stays: it comes
    back, and re-applying the events already applied changes nothing.)"""
    handled: dict[int, tuple[Envelope, set[int]]] = {}
    for env in done:
        if env.message is not None:
            handled.setdefault(id(env.message), (env, set()))[1].add(id(env))
    return [env for env, seen in handled.values() if len(seen) >= env.parts]
