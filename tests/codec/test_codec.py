"""The state and definition codecs: exact round trips, compactness, and clear errors."""

from __future__ import annotations

import contextlib
import json
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from shared.codec.definition import DEFINITION_VERSION, decode_definition, encode_definition
from shared.codec.state import (
    STATE_MAGIC,
    carried_definition,
    decode_state,
    encode_state,
    state_metadata,
)
from shared.definition.workflow import CompiledWorkflow, RetryPolicy, TaskDef
from shared.engine import new_state
from shared.engine.state import RuntimeState
from shared.errors import CodecError
from shared.messages import TaskCompletedEvent, TaskFailedEvent
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from tests.codec.equality import assert_same
from tests.engine.history import WF_ID, History, chain, fan, task, workflow
from tests.engine.worlds import dags


def roundtrip(h: History) -> RuntimeState:
    data = encode_state(h.st)
    back = decode_state(data, h.wf)
    assert_same(h.st, back)
    assert encode_state(back) == data
    return back


def test_roundtrip_of_a_busy_state_is_exact() -> None:
    wf = workflow(
        task("a"),
        task("b", 0, retries=2),
        task("c", 0),
        task("d", 1, 2, policy="any"),
        task("e"),
        task("f"),
        task("g"),
        max_parallelism=4,
    )
    h = History(wf)
    h.now = 1234.5678  # timestamps below a millisecond are rounded, and then stay exact
    h.st = History(wf, now=h.now).st
    roundtrip(h)
    h.activate()
    roundtrip(h)
    h.started("a", worker="gpu-7")
    h.completed("a", output={"metrics": [1.5, None, "é"]}, worker="gpu-7")
    h.failed("b", exit_code=-9, error="killed\nby OOM")
    assert h.st.counts()["ready"] == 1  # c waits for a slot
    roundtrip(h)
    h.completed("e")
    h.failed("c", reason="timeout", error="")
    h.sweep(after_s=1000, lost_after_s=10)  # re-sends queued attempts: sent_ms entries
    back = roundtrip(h)
    assert back.task(0).output is not None
    assert back.task(0).worker == "gpu-7"
    h.cancel("enough")
    roundtrip(h)


def test_roundtrip_after_rerun_keeps_retry_bases() -> None:
    h = History(chain(3))
    h.activate()
    h.completed("t0")
    h.failed("t1", exit_code=2)
    h.retry()
    back = roundtrip(h)
    assert back.base_attempt == {1: 1, 2: 0}
    assert back.run == 2


def test_worker_clock_skew_before_creation_roundtrips() -> None:
    h = History(chain(1))
    h.activate()
    h.now -= 3600  # a worker whose clock runs an hour behind
    h.completed("t0")
    roundtrip(h)


def completed_fan(leaves: int, seed: int = 7) -> History:
    rng = random.Random(seed)
    h = History(fan(leaves))
    h.activate()
    h.completed("root")
    start = h.now
    for i in range(leaves):
        h.now = start + rng.uniform(1, 600)
        h.completed(f"leaf{i}", worker=f"w{i % 4}")
    h.completed("sink")
    assert h.st.status is WorkflowStatus.COMPLETED
    return h


def test_completed_1000_task_state_is_at_most_4_kb() -> None:
    h = completed_fan(998)
    h.st.incarnation = 2**32 - 1  # every workflow submitted now has one (the largest: 10 digits)
    data = encode_state(h.st)
    assert len(data) <= 4096
    roundtrip(h)


def test_the_incarnation_is_version_5_and_a_state_without_one_is_written_as_before() -> None:
    h = History(chain(3))
    h.activate()
    before = encode_state(h.st)
    assert before[3] == 1  # a workflow submitted before incarnations: the old format
    assert decode_state(before, h.wf).incarnation is None
    assert "incarnation" not in state_metadata(h.st)
    h.st.incarnation = 123456789
    data = encode_state(h.st)
    assert data[3] == 5
    assert roundtrip(h).incarnation == 123456789
    assert state_metadata(h.st)["incarnation"] == "123456789"
    assert state_metadata(h.st)["codec"] == "5"


def test_upstream_digests_are_version_8_and_only_while_there_are_some() -> None:
    h = History(chain(3))
    h.activate()
    h.st.incarnation, h.st.incarnation_blobs, h.st.writes = 7, True, 3
    assert encode_state(h.st)[3] == 7
    h.st.upstream_digests = {1: "0123456789abcdef"}
    assert encode_state(h.st)[3] == 8
    assert roundtrip(h).upstream_digests == {1: "0123456789abcdef"}
    assert state_metadata(h.st)["codec"] == "8"


@settings(max_examples=60, deadline=None)
@given(
    wf=dags(),
    incarnation=hs.integers(1, 2**32 - 1),
    digests=hs.booleans(),
    writes=hs.integers(0, 5),
    large=hs.booleans(),
)
def test_a_carried_definition_is_version_9_and_round_trips(
    wf: CompiledWorkflow, incarnation: int, digests: bool, writes: int, large: bool
) -> None:
    """A state given a small definition carries it (version 9, whatever else it holds) and
    gives back exactly those bytes; a large one is not carried and the state is written as
    before (the lowest version that holds it)."""
    encoded = encode_definition(wf)
    given_bytes = encoded + bytes(8 * 1024) if large else encoded
    h = History(wf)
    h.st = new_state(wf, WF_ID, 1000.0, incarnation, given_bytes)
    h.activate()
    h.st.writes = writes
    if digests and len(wf.tasks) > 1:
        h.st.upstream_digests = {len(wf.tasks) - 1: "0123456789abcdef"}
    data = encode_state(h.st)
    back = roundtrip(h)
    if large:
        assert data[3] in (6, 7, 8)
        assert back.definition is None
        assert carried_definition(data) is None
        return
    assert data[3] == 9
    assert state_metadata(h.st)["codec"] == "9"
    assert back.definition == encoded
    assert carried_definition(data) == encoded
    assert decode_definition(encoded) == wf


def test_states_of_versions_before_9_carry_no_definition() -> None:
    h = History(chain(3))
    h.activate()
    h.st.incarnation, h.st.incarnation_blobs, h.st.upstream_digests = 7, True, {1: "ab"}
    data = encode_state(h.st)
    assert data[3] == 8
    assert carried_definition(data) is None
    assert decode_state(data, h.wf).definition is None
    assert carried_definition(b"XYZ" + data[3:]) is None  # decode_state names what is wrong


@pytest.mark.parametrize("bad", [0, -1, 2**32, "7", 1.5, True])
def test_a_corrupt_incarnation_is_a_codec_error(bad: object) -> None:
    h = History(chain(1))
    text = json.dumps(bad).encode()
    h.st.incarnation = int("1" * len(text))  # as long as the bad value: section sizes stay right
    data = encode_state(h.st)
    body = zlib.decompress(data[4:]).replace(b'"inc":' + b"1" * len(text), b'"inc":' + text)
    with pytest.raises(CodecError, match="incarnation"):
        decode_state(data[:4] + zlib.compress(body), h.wf)


def test_conventional_log_names_are_flags_and_others_are_kept() -> None:
    h = History(chain(3))
    h.activate()
    h.apply(
        TaskCompletedEvent(
            workflow_id=WF_ID, task="t0", attempt=1, started_at=h.now, finished_at=h.now,
            log_blob=ResourceNames.log_blob(WF_ID, "t0", 1),
        )
    )  # fmt: skip
    # Events can no longer carry another name (decode_event refuses it); states written before
    # that rule may still hold one, and the codec keeps it.
    h.apply(
        TaskFailedEvent.model_construct(
            workflow_id=WF_ID, task="t1", attempt=1, finished_at=h.now, log_blob="elsewhere/log"
        )
    )
    back = roundtrip(h)
    assert back.task(0).log_blob == ResourceNames.log_blob(WF_ID, "t0", 1)
    assert back.task(1).log_blob == "elsewhere/log"
    assert "log.txt" not in zlib.decompress(encode_state(h.st)[4:]).decode("latin-1")


def test_state_metadata_tells_workers_the_status() -> None:
    h = History(chain(1))
    h.activate()
    h.cancel()
    assert state_metadata(h.st)["status"] == "cancelled"
    assert state_metadata(h.st)["run"] == "1"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"XYZ" + d[3:], "bad magic"),
        (lambda d: d[:3] + bytes([10]) + d[4:], "version 10, newer"),
        (lambda d: d[:-5], "corrupt"),
        (lambda d: d[:4] + zlib.compress(zlib.decompress(d[4:])[:-3]), "corrupt"),
        (lambda d: d[:4] + zlib.compress(b"\xff" * 40), "corrupt"),
        (lambda d: b"", "bad magic"),
    ],
)
def test_corrupt_or_newer_state_is_a_codec_error(mutate: object, message: str) -> None:
    h = History(chain(3))
    h.activate()
    data = encode_state(h.st)
    assert data.startswith(STATE_MAGIC)
    with pytest.raises(CodecError, match=message):
        decode_state(mutate(data), h.wf)  # type: ignore[operator]


def test_state_of_another_definition_is_a_codec_error() -> None:
    h = History(chain(3))
    with pytest.raises(CodecError, match="3 tasks but workflow 'test' defines 2"):
        decode_state(encode_state(h.st), chain(2))


def test_definition_roundtrip_keeps_every_field() -> None:
    wf = CompiledWorkflow.of(
        "pipeline",
        [
            TaskDef(name="prep", cmd="python prep.py", queue="cpu", env={"A": "1"}, cwd="/w"),
            TaskDef(
                name="train.seed=1",
                cmd="python train.py --seed 1",
                queue="gpu",
                parents=(0,),
                dep_policy=1,
                timeout_s=3600,
                queue_timeout_s=600.5,
                num_retries=2,
                retry=RetryPolicy(5, 2, 60, 0.25, (75, 137)),
                group="train",
                params={"seed": 1, "lr": [0.1]},
            ),
            TaskDef(
                name="eval",
                cmd="python eval.py",
                queue="cpu",
                parents=(0, 1),
                dep_policy="all_settled",
                condition="inputs.prep.ok",
            ),
        ],
        max_parallelism=4,
        result_policy="all_tasks_succeed",
        source="name: pipeline\n",
    )
    back = decode_definition(encode_definition(wf))
    assert back == wf
    assert back.children == ((1, 2), (2,), ())


def test_definition_codec_errors() -> None:
    data = encode_definition(chain(2))
    with pytest.raises(CodecError, match="newer"):
        decode_definition(data[:3] + bytes([DEFINITION_VERSION + 1]) + data[4:])
    with pytest.raises(CodecError, match="bad magic"):
        decode_definition(b"DQS\x01" + data[4:])
    with pytest.raises(CodecError, match="corrupt"):
        decode_definition(data[:4] + zlib.compress(b'{"name": "x", "n": ["a"], "p": [[]]}'))
    with pytest.raises(CodecError, match="unknown parent"):
        decode_definition(
            data[:4]
            + zlib.compress(b'{"name":"x","n":["a"],"p":[[5]],"c":{"v":["x"]},"q":{"v":["q"]}}')
        )


@pytest.mark.parametrize("carry", [False, True])
@settings(max_examples=150, deadline=None)
@given(data=hs.data())
def test_any_corruption_is_a_codec_error_or_a_valid_state(data: hs.DataObject, carry: bool) -> None:
    """Decoding never fails with anything but CodecError, whatever the bytes (blobs are input)."""
    wf = workflow(
        task("a"), task("b", 0), task("c", retries=1), task("d"), task("e"), max_parallelism=3
    )
    h = History(wf)
    h.activate()
    h.completed("a", output={"k": [1, 2]}, worker="w9")
    h.failed("c", exit_code=4, error="x")
    assert h.st.counts()["ready"] == 1
    if carry:  # version 9: the definition's bytes in a tenth section
        h.st.incarnation, h.st.incarnation_blobs = 7, True
        h.st.definition = encode_definition(h.wf)
    good = encode_state(h.st)
    body = bytearray(zlib.decompress(good[4:]))
    for _ in range(data.draw(hs.integers(1, 4))):
        at = data.draw(hs.integers(0, len(body) - 1))
        body[at] = data.draw(hs.integers(0, 255))
    cut = data.draw(hs.integers(0, len(body)))
    for blob in (
        good[:4] + zlib.compress(bytes(body)),
        good[:4] + zlib.compress(bytes(body[:cut])),
    ):
        with contextlib.suppress(CodecError):
            decode_state(blob, h.wf)
        with contextlib.suppress(CodecError):
            carried = carried_definition(blob)
            if carried is not None:
                decode_definition(carried)
    definition = bytearray(zlib.decompress(encode_definition(h.wf)[4:]))
    at = data.draw(hs.integers(0, len(definition) - 1))
    definition[at] = data.draw(hs.integers(0, 255))
    with contextlib.suppress(CodecError):
        decode_definition(b"DQD\x01" + zlib.compress(bytes(definition)))


@pytest.mark.parametrize("when", [float("inf"), float("-inf"), float("nan"), 1e300])
def test_a_corrupt_creation_time_is_a_codec_error(when: float) -> None:
    # Found by test_dynamic's corruption property: an infinite time raised OverflowError (a 500)
    # instead of CodecError.
    import struct

    h = History(chain(2))
    h.activate()
    data = encode_state(h.st)
    body = bytearray(zlib.decompress(data[4:]))
    header = struct.Struct("<IBBIdddd")
    fields = list(header.unpack_from(body, 0))
    fields[4] = when  # created_at
    header.pack_into(body, 0, *fields)
    with contextlib.suppress(CodecError):
        decode_state(data[:4] + zlib.compress(bytes(body)), h.wf)
