"""Dynamic fan-out (``foreach_from``) as event histories: capture when the parent completes,
expansion once, names, templating, empty lists, bad lists, fan-in, conditions, limits, rerun."""

from __future__ import annotations

import contextlib
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from shared.codec.state import decode_state, encode_state
from shared.definition.compiler import compile_text
from shared.definition.foreach import expansion_name
from shared.definition.workflow import CompiledWorkflow
from shared.engine import apply
from shared.engine.expansion import expanded
from shared.errors import CodecError
from shared.messages import OutputRef, TaskCompletedEvent
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus

from .history import T0, WF_ID, History, dispatched, finished

S = TaskState
W = WorkflowStatus


def shards(
    *,
    process: str = "",
    merge: str = "",
    cmd: str = "python3 process.py --shard {{ item }}",
    width: int = 10_000,
    path: str = ".shards",
) -> CompiledWorkflow:
    return compile_text(
        f"""
name: shards
tasks:
  - name: list_shards
    kwargs: {{cmd: python3 list_shards.py}}
  - name: process
    depends_on: [list_shards]
    foreach_from: inputs.list_shards{path}
    kwargs: {{cmd: "{cmd}"}}
    {process}
  - name: merge
    depends_on: [process]
    kwargs: {{cmd: python3 merge.py}}
    {merge}
""",
        max_expansion_width=width,
    )


def run_list(h: History, output: object) -> list[tuple[str, int]]:
    h.activate()
    return dispatched(h.completed("list_shards", output=output))


def test_the_parent_s_list_expands_once_into_named_templated_tasks() -> None:
    h = History(shards())
    sent = run_list(h, {"shards": ["s0", "s 1; rm -rf ~"]})
    odd = expansion_name("process", {"item": "s 1; rm -rf ~"}, 1)  # as static foreach names it
    assert sent == [("process.item=s0", 1), (odd, 1)]
    wf = expanded(h.wf, h.st)
    first = wf.tasks[wf.index["process.item=s0"]]
    assert first.cmd == "python3 process.py --shard s0"
    assert first.env["DAGQ_VAR_item"] == "s0"
    assert (first.group, first.params) == ("process", {"item": "s0"})
    assert wf.tasks[wf.index[odd]].cmd == "python3 process.py --shard 's 1; rm -rf ~'"
    assert h.state("process") is S.COMPLETED
    # The duplicate completion expands nothing more.
    again = TaskCompletedEvent(
        workflow_id=WF_ID, task="list_shards", attempt=1, started_at=h.now, finished_at=h.now,
        output=OutputRef(inline={"shards": ["x", "y", "z"]}, size=1),
    )  # fmt: skip
    assert h.apply(again) == []
    assert len(h.st) == 5
    # Merge waits for every expansion (fan-in), then runs.
    assert dispatched(h.completed("process.item=s0")) == []
    assert dispatched(h.completed(odd)) == [("merge", 1)]
    assert finished(h.completed("merge")) == [W.COMPLETED]


def test_object_items_fill_item_keys_and_name_by_their_values() -> None:
    h = History(shards(cmd="run --shard {{ item.shard }} --size {{ item.size }}"))
    sent = run_list(h, {"shards": [{"shard": "a", "size": 2}, {"shard": "b", "size": 3}]})
    assert sent == [("process.shard=a.size=2", 1), ("process.shard=b.size=3", 1)]
    wf = expanded(h.wf, h.st)
    task = wf.tasks[wf.index["process.shard=b.size=3"]]
    assert task.cmd == "run --shard b --size 3"
    assert task.env["DAGQ_VAR_item_shard"] == "b"


def test_an_empty_list_expands_to_nothing_and_satisfies_the_children() -> None:
    h = History(shards())
    assert run_list(h, {"shards": []}) == [("merge", 1)]
    assert h.state("process") is S.COMPLETED
    assert len(h.st) == 3


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ({"shards": "s0"}, "inputs.list_shards.shards is a string, not a list"),
        ({"other": []}, "inputs.list_shards.shards: inputs.list_shards is a mapping without"),
        (None, "inputs.list_shards.shards: inputs.list_shards is null without 'shards'"),
        ({"shards": [[1]]}, "inputs.list_shards.shards[0] is a list: items are strings"),
        ({"shards": [{"k": {"x": 1}}]}, "shards[0] has a mapping at 'k'"),
        ({"shards": list(range(4))}, "has 4 items; a foreach_from expands to at most 3 tasks"),
    ],
)
def test_a_list_that_cannot_expand_fails_the_expanding_task(output: object, reason: str) -> None:
    h = History(shards(width=3))
    run_list(h, output)
    assert h.state("list_shards") is S.COMPLETED
    assert h.state("process") is S.FAILED
    assert reason in (h.st.task(1).error or "")
    assert h.state("merge") is S.UPSTREAM_FAILED
    assert h.st.status is W.FAILED


def test_a_missing_item_key_fails_the_expanding_task() -> None:
    h = History(shards(cmd="run {{ item.shard }}"))
    run_list(h, {"shards": [{"shard": "a"}, {"name": "b"}]})
    assert (
        h.st.task(1).error
        == "cannot expand: item 1 ({'name': 'b'}) has no value for {{ item.shard }}"
    )


def test_a_rerun_after_a_rejected_list_runs_the_producer_again() -> None:
    h = History(shards())
    run_list(h, {"shards": "oops"})
    assert h.st.status is W.FAILED
    assert dispatched(h.retry()) == [("list_shards", 2)]
    assert h.state("process") is S.PENDING
    sent = dispatched(h.completed("list_shards", output={"shards": ["a", "b"]}))
    assert sent == [("process.item=a", 1), ("process.item=b", 1)]


def test_a_rerun_reruns_failed_expansions_with_the_same_items() -> None:
    h = History(shards())
    run_list(h, {"shards": ["a", "b"]})
    h.completed("process.item=a")
    h.failed("process.item=b")
    assert h.st.status is W.FAILED
    assert h.state("merge") is S.UPSTREAM_FAILED
    assert dispatched(h.retry()) == [("process.item=b", 2)]
    assert dispatched(h.completed("process.item=b")) == [("merge", 1)]


def test_a_condition_on_the_expanding_task_is_evaluated_once() -> None:
    h = History(shards(process="condition: inputs['list_shards'].go == true"))
    assert run_list(h, {"shards": ["a"], "go": False}) == [("merge", 1)]
    assert h.state("process") is S.SKIPPED
    assert len(h.st) == 3


def test_conditions_of_children_see_the_expansions() -> None:
    h = History(shards(merge="condition: all(inputs['process*'].ok == true)"))
    run_list(h, {"shards": ["a", "b"]})
    h.completed("process.item=a", output={"ok": True})
    h.completed("process.item=b", output={"ok": False})
    assert h.state("merge") is S.SKIPPED


def test_expansions_survive_the_codec_and_old_states_still_decode() -> None:
    h = History(shards())
    old = encode_state(h.st)
    assert old[3] == 1  # no expansion yet: the version-1 format earlier releases wrote
    run_list(h, {"shards": ["a", "b"]})
    data = encode_state(h.st)
    assert data[3] == 2
    back = decode_state(data, h.wf)
    assert encode_state(back) == data
    assert expanded(h.wf, back).index == expanded(h.wf, h.st).index
    assert decode_state(old, h.wf).counts()["pending"] == 3


def test_the_width_setting_defaults_to_static_foreach_s_limit() -> None:
    from shared.limits import MAX_EXPANSIONS
    from shared.settings import Settings

    assert Settings.model_fields["max_expansion_width"].default == MAX_EXPANSIONS
    assert shards().tasks[1].expand is not None
    assert shards().tasks[1].expand.max_width == MAX_EXPANSIONS  # type: ignore[union-attr]


def test_the_expanded_workflow_is_what_compiling_it_whole_would_give() -> None:
    h = History(shards())
    run_list(h, {"shards": ["a", "b", "c"]})
    running = expanded(h.wf, h.st)
    whole = CompiledWorkflow.of(
        running.name, running.tasks, max_parallelism=running.max_parallelism,
        result_policy=running.result_policy, source=running.source,
    )  # fmt: skip
    assert (running.index, running.children) == (whole.index, whole.children)


# A state and a definition written by dagq before dynamic fan-out (commit c040d39): a -> b, c;
# a completed with an output, b failed its first attempt (retry queued), c queued.
OLD_STATE = (
    "RFFTAXicY2ZgYGAEQjBw+BNy05GBQcERQqOCRiCuVspMUbJSKk/Tzc9JUdJRSi0qyi8qVrKqVjIECieWlKTmFpQoGCqkJW"
    "bmpKZYKaRWZJYoJOenpCoYWykk5efnKtXqKOWXlhSUloB1GYCIzLyczLxUECtbycoQqKA4swrINa8FMsvzi7JTQTZEK5Ub"
    "KsXWMgMdwcLExANyNRMj3G0SQHxRM5JdWRrd1VA5BgZ2TBn8cmA70MSYIWIAJn8zKg=="
)
OLD_DEFINITION = (
    "RFFEAXicfY7dCoMwDEZfJeS6A73tq9Qi/dsmanWt2y7Ed19iETbYRggkHyeHrBjNGFDiNHgUGFEqNDRYaoda4EyJ0kJVe2tO"
    "5YoP5oK7TsDwPthjoLNN4I2xhTEfzuY+LCzraK8EFRPpEFWiLklOJMcm8ksS6KMmLib3WTYR4AQlNrwA9E+TLlnC6kYvobyy"
    "vXO2cD7MIfrcTlGCMrqE8T62KSypC2Sofwrth9D9EX45dnSM2wvqPmrz"
)


def test_blobs_written_before_dynamic_fan_out_still_decode_and_run() -> None:
    import base64

    from shared.codec.definition import decode_definition

    wf = decode_definition(base64.b64decode(OLD_DEFINITION))
    assert [t.name for t in wf.tasks] == ["a", "b", "c"]
    assert all(t.expand is None for t in wf.tasks)
    data = base64.b64decode(OLD_STATE)
    st = decode_state(data, wf)
    assert st.counts()["queued"] == 2
    assert st.task(0).output == OutputRef(inline={"k": 1}, size=7)
    assert encode_state(st) == data  # unchanged format: written back byte for byte
    done = TaskCompletedEvent(
        workflow_id="wf-old", task="c", attempt=1, started_at=T0 + 9, finished_at=T0 + 10
    )
    assert dispatched(apply(wf, st, done, T0 + 10)) == []
    assert st.state_of(2) is S.COMPLETED


def test_an_expansion_past_the_workflow_task_limit_fails_the_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shared.engine.expansion as expansion

    monkeypatch.setattr(expansion, "MAX_TASKS", 5)
    h = History(shards())
    run_list(h, {"shards": ["a", "b", "c"]})
    assert h.state("process") is S.FAILED
    assert h.st.task(1).error == (
        "cannot expand: 3 tasks would make the workflow 6 tasks; the limit is 5"
    )


def test_an_item_that_makes_an_environment_over_the_limit_fails_the_task() -> None:
    # Before: only the task count and each cmd were checked; a 16 KB env template with 1 KB items
    # gave each expanded task megabytes of env (the limit is 16 KiB, as at submit).
    template = "{{ item }}" * 20
    wf = compile_text(
        f"""
name: env
tasks:
  - name: list_shards
    kwargs: {{cmd: python3 list_shards.py}}
  - name: process
    depends_on: [list_shards]
    foreach_from: inputs.list_shards.shards
    kwargs: {{cmd: "run {{{{ item }}}}", env: {{BIG: "{template}"}}}}
"""
    )
    h = History(wf)
    run_list(h, {"shards": ["x" * 1000, "y"]})
    assert h.state("process") is S.FAILED
    assert (h.st.task(1).error or "").startswith(
        "cannot expand: item 0 makes an environment of 21,"
    )
    assert len(h.st) == 2  # nothing was added


@pytest.mark.parametrize(
    ("limit", "value", "reason"),
    [
        ("MAX_EDGES", 5, "the workflow would have 7 dependency edges; the limit is 5"),
        ("MAX_DEPENDENCIES", 2, "task 'merge' would depend on 3 tasks; the limit is 2"),
        ("MAX_EXPANDED_BYTES", 80, "by item 1 the workflow's commands and environments exceed"),
    ],
)
def test_an_expansion_over_a_submit_limit_fails_the_task_and_adds_nothing(
    monkeypatch: pytest.MonkeyPatch, limit: str, value: int, reason: str
) -> None:
    import shared.engine.expansion as expansion

    monkeypatch.setattr(expansion, limit, value)
    h = History(shards(cmd="p {{ item }}"))
    run_list(h, {"shards": ["a", "b", "c"]})
    assert h.state("process") is S.FAILED
    assert reason in (h.st.task(1).error or "")
    assert len(h.st) == 3
    assert h.state("merge") is S.UPSTREAM_FAILED


def test_a_list_in_a_blob_the_coordinator_could_not_read_fails_the_task() -> None:
    h = History(shards())
    h.activate()
    unread = TaskCompletedEvent(
        workflow_id=WF_ID, task="list_shards", attempt=1, started_at=h.now, finished_at=h.now,
        output=OutputRef(blob=ResourceNames.output_blob("wf-1", "list_shards", 1), size=20_000_000),
    )  # fmt: skip
    h.apply(unread)
    assert h.state("process") is S.FAILED
    assert "stored as a blob that could not be read (at most 16 MiB of JSON)" in (
        h.st.task(1).error or ""
    )


def test_a_read_blob_list_expands_and_the_state_keeps_only_the_reference() -> None:
    h = History(shards())
    h.activate()
    ref = OutputRef(blob=ResourceNames.output_blob("wf-1", "list_shards", 1), size=9000)
    read = TaskCompletedEvent(
        workflow_id=WF_ID, task="list_shards", attempt=1, started_at=h.now, finished_at=h.now,
        output=ref,
    )  # fmt: skip
    lists = {ref.blob: {"shards": ["a"]}}
    assert dispatched(apply(h.wf, h.st, read, h.tick(), lists=lists)) == [("process.item=a", 1)]
    assert h.st.task(0).output == OutputRef(
        blob=ResourceNames.output_blob("wf-1", "list_shards", 1), size=9000
    )


@settings(max_examples=150, deadline=None)
@given(data=hs.data())
def test_a_corrupt_dynamic_state_is_a_codec_error_or_a_valid_state(data: hs.DataObject) -> None:
    h = History(shards())
    run_list(h, {"shards": ["a", "b", {"k": 1}]} if data.draw(hs.booleans()) else {"shards": 3})
    good = encode_state(h.st)
    body = bytearray(zlib.decompress(good[4:]))
    for _ in range(data.draw(hs.integers(1, 4))):
        body[data.draw(hs.integers(0, len(body) - 1))] = data.draw(hs.integers(0, 255))
    with contextlib.suppress(CodecError):
        decode_state(good[:4] + zlib.compress(bytes(body)), h.wf)


def test_max_parallelism_and_cancel_reach_the_expansions() -> None:
    wf = compile_text(
        """
name: capped
max_parallelism: 2
tasks:
  - name: list_shards
    kwargs: {cmd: x}
  - name: process
    depends_on: [list_shards]
    foreach_from: inputs.list_shards
    kwargs: {cmd: "p {{ item }}"}
"""
    )
    h = History(wf)
    h.activate()
    assert dispatched(h.completed("list_shards", output=[1, 2, 3, 4])) == [
        ("process.item=1", 1),
        ("process.item=2", 1),
    ]
    assert h.st.in_flight == 2
    assert dispatched(h.completed("process.item=1")) == [("process.item=3", 1)]
    h.started("process.item=2")
    h.cancel()
    assert h.states()["process.item=3"] is S.CANCELLED
    assert h.states()["process.item=4"] is S.CANCELLED
    assert h.states()["process.item=2"] is S.RUNNING  # stops when its worker reports
    h.failed("process.item=2", reason="cancelled", exit_code=None)
    assert h.st.status is W.CANCELLED


def test_reads_of_an_expanded_state_reuse_one_expansion() -> None:
    # Before: every GET of the workflow decoded the state and rebuilt the whole expansion.
    h = History(shards())
    run_list(h, {"shards": ["a", "b"]})
    data = encode_state(h.st)
    first, second = decode_state(data, h.wf), decode_state(data, h.wf)
    assert expanded(h.wf, first) is expanded(h.wf, second)
    assert len(expanded(h.wf, second).tasks) == 5
