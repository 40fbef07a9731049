"""Azure Storage's rules that both adapters enforce alike (the memory one, to stay faithful)."""

from __future__ import annotations

from shared.errors import LeaseError, MessageError
from shared.limits import MAX_MESSAGE_BYTES


def too_large(queue: str, text: str) -> MessageError:
    """The error for a message the queue service refuses for its size."""
    return MessageError(
        f"message of {len(text.encode())} bytes is too large for queue {queue!r} (the limit is "
        f"{MAX_MESSAGE_BYTES} bytes): send large payloads as blobs and reference them"
    )


def check_lease_duration(duration_s: int) -> None:
    """Azure accepts 15-60 seconds, or -1 for an infinite lease."""
    if duration_s != -1 and not 15 <= duration_s <= 60:
        raise LeaseError(f"lease duration {duration_s}s is invalid: use 15-60 seconds, or -1")
