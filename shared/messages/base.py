"""The base of every message shape: frozen, no extra fields; the app-signed kind; the encoder."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shared.errors import MessageError
from shared.limits import MESSAGE_BUDGET_BYTES, SIGNATURE_CHARS


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SignedMessage(_Message):
    """A message only the app may send: it carries the app's signature (``shared.signing``)."""

    sig: str | None = Field(default=None, max_length=SIGNATURE_CHARS)
    """The app's Ed25519 signature of the rest of the message (None: sent unsigned, by a
    deployment without ``DAGQ_SIGNING_KEY``, which its workers accept only without keys too)."""


def encode(message: _Message) -> str:
    """Compact JSON text of a message, checked against the budget."""
    text = message.model_dump_json(exclude_defaults=False, exclude_none=True)
    size = len(text.encode())
    if size > MESSAGE_BUDGET_BYTES:
        raise MessageError(
            f"{type(message).__name__} is {size} bytes, over the {MESSAGE_BUDGET_BYTES}-byte budget"
        )
    return text
