"""Ed25519 keys, signatures and their checks (the package's docstring says what and why)."""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from shared.errors import ConfigError, MessageError

if TYPE_CHECKING:
    from shared.messages import SignedMessage

# ``cryptography`` is imported where a key is made or used, not here: the Functions app imports
# the messages (and so this module) at start, within its cold-start budget.

M = TypeVar("M", bound="SignedMessage")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


def _unb64(text: str, what: str, size: int) -> bytes:
    try:
        raw = base64.b64decode(text.strip().encode("ascii"), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raw = b""
    if len(raw) != size:
        raise ConfigError(f"{what} is not a {size}-byte key in URL-safe base64")
    return raw


def signed_text(message: SignedMessage) -> bytes:
    """The bytes a signature covers: the message's kind, then its canonical JSON without ``sig``."""
    body = message.model_dump(mode="json", exclude={"sig"})
    kind = type(message).__name__
    return f"dagq/{kind}/v1\n".encode() + json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8", "surrogatepass")


class Signer:
    """Signs messages with the app's private key."""

    def __init__(self, private_key: str) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        seed = _unb64(private_key, "DAGQ_SIGNING_KEY", 32)
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public_key = _b64(self._key.public_key().public_bytes_raw())

    def sign(self, message: M) -> M:
        """``message`` with its signature."""
        signature = _b64(self._key.sign(signed_text(message)))
        return message.model_copy(update={"sig": signature})


class Verifier:
    """Checks messages against the public keys in force (any one of them)."""

    def __init__(self, public_keys: Iterable[str]) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        self._keys = [
            Ed25519PublicKey.from_public_bytes(_unb64(key, "a key of DAGQ_VERIFY_KEYS", 32))
            for key in public_keys
        ]
        if not self._keys:
            raise ConfigError("no verify key: set DAGQ_VERIFY_KEYS")

    def check(self, message: SignedMessage) -> None:
        """Raise MessageError unless a key in force signed ``message``."""
        kind = type(message).__name__
        if message.sig is None:
            raise MessageError(f"{kind} is not signed by the app (DAGQ_VERIFY_KEYS is set)")
        try:
            signature = base64.b64decode(message.sig.encode("ascii"), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            signature = b""
        from cryptography.exceptions import InvalidSignature

        text = signed_text(message)
        for key in self._keys:
            try:
                key.verify(signature, text)
            except InvalidSignature:
                continue
            return
        raise MessageError(f"{kind} has a signature no key in DAGQ_VERIFY_KEYS made")


@functools.cache
def signer_of(private_key: str | None) -> Signer | None:
    """The app's signer, or None when no signing key is configured."""
    return Signer(private_key) if private_key else None


@functools.cache
def verifier_of(public_keys: str | None, private_key: str | None = None) -> Verifier | None:
    """The verifier of comma-separated ``public_keys`` (plus the public half of ``private_key``,
    so an app needs only its own key), or None when neither is configured: nothing is checked."""
    keys = [key.strip() for key in (public_keys or "").split(",") if key.strip()]
    if private_key:
        keys.append(Signer(private_key).public_key)
    return Verifier(dict.fromkeys(keys)) if keys else None


def new_key_pair() -> tuple[str, str]:
    """A fresh (private, public) key pair, encoded as the settings take them."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    return _b64(key.private_bytes_raw()), _b64(key.public_key().public_bytes_raw())
