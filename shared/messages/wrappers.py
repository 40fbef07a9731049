"""The two shapes that carry events on the event queue (the events themselves are in ``events``):

- ``EventBatch``: several task events of one partition in one message (at most
  ``MAX_BATCH_EVENTS`` and ``MAX_BATCH_BYTES``). A worker's reports that
  become ready while its last send is in flight travel together (``worker_agent.outbox``): one
  send, one receive share and one delete for the lot instead of one each. The coordinator splits
  the message into its events and deletes it only once every event in it is handled.
- ``Redelivery``: an event message the coordinator handed back to the queue, with the deliveries
  it had (a re-sent message starts again at dequeue count 1).

Both are untrusted input like any event: a batch's outer shape is checked here (its events are
each decoded and bounded by ``decode_event``, as if sent alone), and one that does not parse is
kept whole, to be dead-lettered as malformed with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.errors import MessageError
from shared.limits import MAX_BATCH_BYTES, MAX_BATCH_EVENTS, MAX_COUNTER, MAX_MESSAGE_BYTES
from shared.messages.events import Event, decode_event
from shared.messages.fields import explain


class _Wrapper(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EventBatch(_Wrapper):
    """Task events of one partition sent as one message (each event as ``encode`` writes it)."""

    kind: Literal["batch"] = "batch"
    events: list[dict[str, Any]] = Field(min_length=2, max_length=MAX_BATCH_EVENTS)


_BATCH_START = '{"kind":"batch",'


def batch_text(events: Sequence[str]) -> str:
    """The message carrying ``events`` (texts from ``shared.messages.encode``): a single event is
    sent as it is; MessageError beyond ``MAX_BATCH_EVENTS`` events or ``MAX_BATCH_BYTES``."""
    if len(events) == 1:
        return events[0]
    if not 2 <= len(events) <= MAX_BATCH_EVENTS:
        raise MessageError(f"a batch holds 2 to {MAX_BATCH_EVENTS} events, not {len(events)}")
    text = _BATCH_START + '"events":[' + ",".join(events) + "]}"
    if (size := len(text.encode())) > MAX_BATCH_BYTES:
        raise MessageError(f"an event batch of {size} bytes is over the {MAX_BATCH_BYTES}")
    return text


def batch_overhead(count: int) -> int:
    """Bytes a batch of ``count`` events adds to the events' own: what a sender budgets for."""
    return len(_BATCH_START + '"events":[]}') + max(0, count - 1)


def split_batch(text: str) -> list[str] | None:
    """The events of a batch message, each as its own JSON text; None if ``text`` is not a batch.
    MessageError (with the reason) for a message that says it is a batch and is not a valid one."""
    if not text.startswith(_BATCH_START):
        return None
    if len(text) > MAX_MESSAGE_BYTES:
        raise MessageError(f"malformed event batch: longer than {MAX_MESSAGE_BYTES} bytes")
    try:
        batch = EventBatch.model_validate_json(text)
    except ValidationError as exc:
        raise MessageError(f"malformed event batch: {explain(exc)}") from None
    return [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in batch.events]


class Redelivery(_Wrapper):
    """An event the coordinator handed back to the event queue (a Functions trigger message it
    could not apply), with the deliveries it has had: a re-sent message starts again at dequeue
    count 1, so without this an event that keeps failing would never reach its bound."""

    kind: Literal["redelivery"] = "redelivery"
    deliveries: int = Field(ge=0, le=MAX_COUNTER)
    event: str
    """The original event message (an event or a batch), as it was received."""


_REDELIVERY_START = '{"kind":"redelivery",'


def wrap_redelivery(text: str, deliveries: int) -> str:
    """The message that hands ``text`` back to the event queue, carrying ``deliveries``."""
    return Redelivery(deliveries=deliveries, event=unwrap_redelivery(text)[0]).model_dump_json()


def unwrap_redelivery(text: str) -> tuple[str, int]:
    """The original event text of a message and the deliveries it had before it was re-sent (0
    for an ordinary event; a redelivery that cannot be decoded is returned as it is, to be
    dead-lettered as malformed)."""
    if not text.startswith(_REDELIVERY_START) or len(text) > 2 * MAX_MESSAGE_BYTES:
        return text, 0
    try:
        wrapper = Redelivery.model_validate_json(text)
    except ValidationError:
        return text, 0
    return wrapper.event, wrapper.deliveries


def events_of(text: str) -> list[Event]:
    """Every event a message carries, decoded (``decode_event``): a batch's events in order, a
    redelivery's event(s), or the one event; MessageError for a malformed one."""
    original, _ = unwrap_redelivery(text)
    parts = split_batch(original)
    return [decode_event(part) for part in (parts if parts is not None else [original])]
