"""Each transition as an event history: activate, started, completed, failed, duplicates, stale and
ahead-of-state attempts, result policies."""

from __future__ import annotations

import sys

import pytest

from shared.codec.state import encode_state
from shared.engine import apply
from shared.engine.commands import Dispatch
from shared.errors import MessageError
from shared.messages import ActivateEvent, OutputRef, TaskCompletedEvent
from shared.states import TaskState, WorkflowStatus

from .history import WF_ID, History, chain, dispatched, fan, finished, task, workflow

S = TaskState
W = WorkflowStatus


def test_new_state_is_pending_with_every_task_pending() -> None:
    h = History(chain(3))
    assert h.st.status is W.PENDING
    assert h.st.run == 1
    assert h.st.counts()["pending"] == 3
    view = h.st.task(0)
    assert view.state is S.PENDING
    assert view.attempt == 0
    assert view.queued_at is None


def test_activate_dispatches_roots_once() -> None:
    h = History(workflow(task("a"), task("b"), task("c", 0, 1)))
    commands = h.activate()
    assert dispatched(commands) == [("a", 1), ("b", 1)]
    first = commands[0]
    assert isinstance(first, Dispatch)
    assert (first.task, first.queue, first.delay_s, first.upstream) == (0, "cpu", 0.0, None)
    assert h.st.status is W.RUNNING
    assert h.states() == {"a": S.QUEUED, "b": S.QUEUED, "c": S.PENDING}
    assert h.st.task(0).queued_at == h.now
    assert h.activate() == []  # already running: no duplicate dispatches


def test_chain_runs_to_completion_and_finishes_once() -> None:
    h = History(chain(3))
    h.activate()
    h.started("t0")
    assert h.state("t0") is S.RUNNING
    assert h.st.task(0).worker == "w1"
    assert dispatched(h.completed("t0")) == [("t1", 1)]
    assert dispatched(h.completed("t1")) == [("t2", 1)]
    commands = h.completed("t2")
    assert finished(commands) == [W.COMPLETED]
    assert h.st.status is W.COMPLETED
    assert h.st.finished_at == h.now
    assert h.st.error is None
    assert h.st.counts()["completed"] == 3
    view = h.st.task(2)
    assert (view.exit_code, view.attempt, view.finished_at) == (0, 1, h.now)
    assert h.completed("t2") == []  # a duplicate after the end changes nothing


def test_fan_in_child_waits_for_every_parent_and_gets_their_outputs() -> None:
    h = History(fan(3))
    h.activate()
    h.completed("root", output={"n": 3})
    assert h.completed("leaf0", output=1) == []
    assert h.completed("leaf1") == []
    commands = h.completed("leaf2", output=[2])
    (sink,) = [c for c in commands if isinstance(c, Dispatch)]
    assert sink.name == "sink"
    assert sink.upstream == {
        "leaf0": OutputRef(inline=1, size=1),
        "leaf2": OutputRef(inline=[2], size=1),
    }


def test_duplicate_and_stale_events_change_nothing() -> None:
    h = History(chain(2))
    h.activate()
    h.started("t0")
    before = encode_state(h.st)
    assert h.started("t0") == []  # duplicate start
    assert encode_state(h.st) == before
    h.completed("t0")
    before = encode_state(h.st)
    assert h.completed("t0", attempt=1) == []  # duplicate completion: t1 is not dispatched again
    assert h.failed("t0", attempt=1) == []  # a failure for a terminal task
    assert h.started("t0", attempt=1) == []
    assert encode_state(h.st) == before


def test_stale_attempt_is_ignored_after_a_retry() -> None:
    h = History(workflow(task("a", retries=2)))
    h.activate()
    assert dispatched(h.failed("a")) == [("a", 2)]
    before = encode_state(h.st)
    assert h.completed("a", attempt=1) == []  # the old attempt's late completion
    assert h.state("a") is S.QUEUED
    assert encode_state(h.st) == before


def test_attempt_ahead_of_state_is_adopted() -> None:
    # The coordinator dispatched attempt 2 (a retry), crashed before flushing; the blob says 1.
    h = History(workflow(task("t0", retries=1), task("t1", 0)))
    h.activate()
    commands = h.completed("t0", attempt=2)
    assert h.state("t0") is S.COMPLETED
    assert h.attempt("t0") == 2
    assert dispatched(commands) == [("t1", 1)]


def test_start_of_an_attempt_ahead_replaces_the_running_one() -> None:
    h = History(workflow(task("t0", retries=1)))
    h.activate()
    h.started("t0", attempt=1, worker="old")
    h.started("t0", attempt=2, worker="new")
    view = h.st.task(0)
    assert (view.attempt, view.worker, view.started_at) == (2, "new", h.now)


def test_task_event_before_activation_activates_and_adopts() -> None:
    h = History(chain(2))
    commands = h.completed("t0", attempt=1)  # activation was applied, then lost with a crash
    assert h.st.status is W.RUNNING
    assert h.state("t0") is S.COMPLETED
    assert ("t1", 1) in dispatched(commands)


def test_unknown_task_or_other_workflow_is_a_message_error() -> None:
    h = History(chain(1))
    h.activate()
    event = TaskCompletedEvent(
        workflow_id=WF_ID, task="nope", attempt=1, started_at=1, finished_at=2
    )
    with pytest.raises(MessageError, match="nope"):
        apply(h.wf, h.st, event, h.now)
    bad_attempt = TaskCompletedEvent.model_construct(
        workflow_id=WF_ID, task="t0", attempt=0, started_at=1.0, finished_at=2.0
    )
    with pytest.raises(MessageError, match="attempt 0"):
        apply(h.wf, h.st, bad_attempt, h.now)
    with pytest.raises(MessageError, match="other"):
        apply(h.wf, h.st, ActivateEvent(workflow_id="other"), h.now)


def test_failure_without_budget_fails_task_cascades_and_fails_workflow() -> None:
    h = History(workflow(task("a"), task("b", 0), task("c", 1), task("d")))
    h.activate()
    h.completed("d")
    commands = h.failed("a", exit_code=3, error="disk full")
    assert h.states() == {
        "a": S.FAILED,
        "b": S.UPSTREAM_FAILED,
        "c": S.UPSTREAM_FAILED,
        "d": S.COMPLETED,
    }
    assert h.st.task(0).error == "exit code 3: disk full"
    assert h.st.task(0).exit_code == 3
    assert h.st.task(1).error == "upstream failed: a is failed"
    assert h.st.task(2).error == "upstream failed: b is upstream_failed"
    assert finished(commands) == [W.FAILED]
    assert h.st.error == "1 task failed: a"


def test_upstream_failed_cascades_through_a_deep_chain_without_recursion() -> None:
    n = 3 * sys.getrecursionlimit()  # far deeper than any recursion could go
    h = History(chain(n))
    h.activate()
    commands = h.failed("t0")
    assert h.st.counts()["upstream_failed"] == n - 1
    assert finished(commands) == [W.FAILED]


def test_failure_summary_names_a_few_tasks() -> None:
    h = History(workflow(*(task(f"t{i}") for i in range(7))))
    h.activate()
    for i in range(7):
        h.failed(f"t{i}")
    assert h.st.error == "7 tasks failed: t0, t1, t2, t3, t4…"


@pytest.mark.parametrize(
    ("policy", "outcomes", "expected"),
    [
        ("all_sinks_succeed", {"a": False, "b": True, "d": True}, W.COMPLETED),  # a is no sink
        ("all_tasks_succeed", {"a": False, "b": True, "d": True}, W.FAILED),
        ("all_sinks_succeed", {"a": True, "b": True, "d": False}, W.FAILED),  # d is a sink
        ("all_tasks_succeed", {"a": True, "b": True, "d": True}, W.COMPLETED),
    ],
)
def test_result_policies(policy: str, outcomes: dict[str, bool], expected: W) -> None:
    # a, b -> c (any of them); d stands alone. Sinks: c and d.
    wf = workflow(
        task("a"), task("b"), task("c", 0, 1, policy="any"), task("d"), result_policy=policy
    )
    h = History(wf)
    h.activate()
    for name, ok in outcomes.items():
        if ok:
            h.completed(name)
        else:
            h.failed(name)
    if h.state("c") is S.QUEUED:
        h.completed("c")
    assert h.st.status is expected


def test_all_sinks_succeed_needs_at_least_one_completed_task() -> None:
    h = History(workflow(task("a"), task("b", 0, condition='state("a") == "failed"')))
    h.activate()
    h.completed("a")
    assert h.state("b") is S.SKIPPED
    assert h.st.status is W.COMPLETED  # a completed, the sink was skipped: success
