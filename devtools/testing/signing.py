"""The test session's message-signing keys: the app processes the tests start sign with the
private one, their workers verify with the public one (``shared.signing``), as a deployment does.
In-process tests that hand-make task messages and run no verifying worker need none of this."""

from __future__ import annotations

from typing import TypeVar

from shared.messages import SignedMessage
from shared.signing import Signer, new_key_pair

PRIVATE_KEY, PUBLIC_KEY = new_key_pair()


def app_env() -> dict[str, str]:
    """What an app process (the local host) needs: its signing key and the verify key."""
    return {"DAGQ_SIGNING_KEY": PRIVATE_KEY, "DAGQ_VERIFY_KEYS": PUBLIC_KEY}


def worker_env() -> dict[str, str]:
    """What a worker needs: the app's public key only."""
    return {"DAGQ_VERIFY_KEYS": PUBLIC_KEY}


M = TypeVar("M", bound=SignedMessage)


def signed(message: M) -> M:
    """``message`` signed as the session's app signs."""
    return Signer(PRIVATE_KEY).sign(message)
