"""What only the app may say is signed by the app: task messages and control events.

The worker identity can put messages on every task queue and events on every event queue (its
roles must allow completions and heartbeats). Without signatures a compromised worker could run
code on every pool (a forged task message) or cancel and rerun workflows (a forged control
event), bypassing the API. So the app signs each ``TaskMessage`` it dispatches and each
``ActivateEvent``, ``CancelEvent`` and ``RetryEvent`` it sends, with an Ed25519 key only it holds
(``DAGQ_SIGNING_KEY``); workers verify a task message before they claim it, and the coordinator a
control event before it applies it, against ``DAGQ_VERIFY_KEYS`` (the public keys: two during a
rotation, docs/security.md). What fails is dead-lettered with its reason, never run or applied.

The signature covers the whole message except ``sig`` — its identity (workflow, task, attempt,
incarnation, run, partition), command, env, cwd, timeout and upstream refs — as canonical JSON
(sorted keys, no spaces), prefixed by the message's kind, so no signed text of one kind verifies
as another. Keys are raw 32-byte Ed25519 keys in URL-safe base64. Without keys (a development
setup) nothing is signed or verified, and the worker and doctor say so.
"""

from shared.signing.keys import (
    Signer,
    Verifier,
    new_key_pair,
    signed_text,
    signer_of,
    verifier_of,
)

__all__ = ["Signer", "Verifier", "new_key_pair", "signed_text", "signer_of", "verifier_of"]
