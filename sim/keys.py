"""The app's message-signing key in the simulation: the coordinators sign task messages, the users
(the API) sign control events, the workers and coordinators verify (``shared.signing``). Fixed,
so a seed replays exactly (Ed25519 signatures are deterministic)."""

from __future__ import annotations

import base64

from shared.signing import Signer, Verifier

SIGNING_KEY = base64.urlsafe_b64encode(b"dagq simulation signing key 0001").decode("ascii")
SIGNER = Signer(SIGNING_KEY)
VERIFIER = Verifier([SIGNER.public_key])
FORGER = Signer(base64.urlsafe_b64encode(b"a key the app never had, forger1").decode("ascii"))
"""Signs the forger's messages: a signature, but no key in force made it."""
FORGED_CMD = "echo forged: this must never run"
"""The command of every task message the forger sends."""
