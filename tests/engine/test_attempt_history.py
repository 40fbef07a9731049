"""Every attempt kept: a retry or a rerun keeps what the earlier attempts reported, bounded."""

from __future__ import annotations

import pytest

from shared.codec.state import decode_state, encode_state
from shared.engine import attempt_history
from shared.engine.state import FAILED
from shared.states import TaskState

from .history import History, chain, task, workflow


def test_a_retry_keeps_the_failed_attempt() -> None:
    h = History(workflow(task("a", retries=2)))
    h.activate()
    h.started("a", worker="w1")
    h.failed("a", exit_code=75, error="simulated network error")
    h.started("a", worker="w2")
    h.completed("a", worker="w2")
    (first,) = h.st.history[0]
    assert (first.attempt, first.code, first.exit_code, first.worker) == (1, FAILED, 75, "w1")
    assert first.error == "exit code 75: simulated network error"
    assert first.started_ms is not None
    assert first.finished_ms is not None
    assert first.queued_ms is not None
    assert first.queued_ms <= first.started_ms
    assert h.st.task(0).state is TaskState.COMPLETED
    assert h.st.task(0).attempt == 2


def test_a_rerun_keeps_the_attempts_of_the_previous_run() -> None:
    h = History(chain(2))
    h.activate()
    h.completed("t0")
    h.failed("t1", error="broken")
    h.retry()
    h.completed("t1")
    assert [p.attempt for p in h.st.history[1]] == [1]
    assert h.st.history[1][0].code == FAILED
    assert 0 not in h.st.history  # t0 ran once: nothing kept


def test_history_survives_the_codec_and_a_state_without_it_is_version_1() -> None:
    h = History(workflow(task("a", retries=3), task("b")))
    h.activate()
    h.completed("b")
    assert encode_state(h.st)[3] == 1  # no earlier attempts: the old format, byte for byte
    h.failed("a")
    h.failed("a", reason="timeout")
    data = encode_state(h.st)
    assert data[3] == 3
    back = decode_state(data, h.wf)
    assert back.history == h.st.history
    assert back.n_history == 2
    assert encode_state(back) == data


def test_a_task_keeps_its_most_recent_attempts_only() -> None:
    n = attempt_history.KEPT_PER_TASK + 3
    h = History(workflow(task("a", retries=n + 1)))
    h.activate()
    for _ in range(n):
        h.failed("a", error="x" * 1000)
    kept = h.st.history[0]
    assert [p.attempt for p in kept] == list(range(4, n + 1))
    assert all(len(p.error or "") <= attempt_history.ERROR_CHARS for p in kept)


def test_a_workflow_keeps_a_bounded_number_of_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attempt_history, "KEPT_PER_WORKFLOW", 3)
    h = History(workflow(*(task(f"t{i}", retries=2) for i in range(5))))
    h.activate()
    for i in range(5):
        h.failed(f"t{i}")
    assert h.st.n_history == 3
    assert sorted(h.st.history) == [0, 1, 2]


def test_cancel_of_a_retried_task_keeps_its_history() -> None:
    h = History(workflow(task("a", retries=2)))
    h.activate()
    h.failed("a")
    h.cancel()
    assert h.state("a") is TaskState.CANCELLED
    assert [p.attempt for p in h.st.history[0]] == [1]


def test_upstream_failed_names_every_failed_parent() -> None:
    """Issue 20: with `any`, a task fails upstream once all its parents failed: name them all."""
    h = History(workflow(task("a"), task("b"), task("c", 0, 1, policy="any")))
    h.activate()
    h.failed("a")
    h.failed("b")
    assert h.st.task(2).error == "upstream failed: b is failed, a is failed"


def test_upstream_failed_names_a_few_parents_and_counts_the_rest() -> None:
    parents = [task(f"p{i}") for i in range(8)]
    h = History(workflow(*parents, task("sink", *range(8), policy="any")))
    h.activate()
    for i in range(8):
        h.failed(f"p{i}")
    error = h.st.task(8).error or ""
    assert error.startswith("upstream failed: p7 is failed, p0 is failed")
    assert error.endswith(", and 3 more failed parents")
