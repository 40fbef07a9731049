"""notify-poison: notifications the Functions host gave up on, dead-lettered with the reason.

The ``notify`` function retries an endpoint's failures itself and dead-letters a notification it
cannot deliver (``shared.notify.delivery``); it raises only when storage fails it (the workflow's
state cannot be read, the retry cannot be sent), and after ``maxDequeueCount`` such deliveries the
host moves the message to ``{prefix}-notify-poison``, which nothing reads. Partition 0's sweep
empties that queue into the deployment's dead-letter store, each message with why it is there,
so every notification ends delivered or accounted for (``dagq doctor`` lists dead letters). A
notification is not sent again from here: storage trouble that outlasted five deliveries is worth
an operator's look, and a message that crashes the function would come back forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pydantic import ValidationError

from shared.coordinator.stats import PassStats
from shared.limits import MAX_MESSAGE_BYTES
from shared.messages import NotifyMessage
from shared.storage.ports import DeadLetters, Queue, ReceivedMessage

log = logging.getLogger("dagq.coordinator")

NOTIFY_POISON_CYCLES = 10
"""Receive cycles of 32 per sweep (the rest waits for the next sweep)."""


def reason_of(message: ReceivedMessage, queue: str) -> str:
    """Why a notification is dead-lettered from the poison queue, naming what it was about."""
    try:
        if len(message.text) > MAX_MESSAGE_BYTES:
            raise ValueError("too long to be a notification")
        notice = NotifyMessage.model_validate_json(message.text)
    except (ValidationError, ValueError):
        about = "an unreadable notification"
    else:
        task = f" task {notice.task}" if notice.task else ""
        to = f"webhook {notice.target}" if notice.target is not None else "Event Grid"
        about = f"notification of workflow {notice.workflow_id}{task} {notice.event} to {to}"
    return (
        f"{about}: the notify function raised in {message.dequeue_count} deliveries (storage"
        f" trouble, not the endpoint's answer), so the Functions host moved it to {queue};"
        " not delivered"
    )


async def dead_letter_poisoned(
    poison: Queue,
    deadletters: DeadLetters,
    clock: Callable[[], float],
    stats: PassStats,
    visibility_s: int,
) -> None:
    """Move every message of ``poison`` to the dead letters, each deleted only once stored."""

    async def one(message: ReceivedMessage) -> None:
        try:
            await deadletters.put(
                message_id=message.id,
                text=message.text,
                reason=reason_of(message, poison.name),
                received_at=clock(),
            )
            stats.dead_lettered += 1
            await poison.delete(message)
        except Exception as exc:  # it comes back after its visibility: the next sweep tries again
            log.warning("could not dead-letter notification %s: %r", message.id, exc)

    for _ in range(NOTIFY_POISON_CYCLES):
        try:
            messages = await poison.receive(32, visibility_s)
        except Exception as exc:
            log.warning("receive from %s failed: %r", poison.name, exc)
            return
        if not messages:
            return
        stats.bump_sweep("notify_poison", len(messages))
        await asyncio.gather(*(one(m) for m in messages))
