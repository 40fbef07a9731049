"""Dependency policies, conditions and max_parallelism, as event histories."""

from __future__ import annotations

import pytest

from shared.engine.policy import decide
from shared.engine.state import READY, UPSTREAM_FAILED
from shared.states import TaskState, WorkflowStatus

from .history import History, dispatched, task, workflow

S = TaskState


def three_parents(policy: object, **child: object) -> History:
    """a, b, c -> d (with ``policy``)."""
    wf = workflow(task("a"), task("b"), task("c"), task("d", 0, 1, 2, policy=policy, **child))  # type: ignore[arg-type]
    h = History(wf)
    h.activate()
    return h


def test_all_needs_every_parent_and_fails_on_the_first_failure() -> None:
    h = three_parents("all")
    h.completed("a")
    h.completed("b")
    assert h.state("d") is S.PENDING
    h.failed("c")
    assert h.state("d") is S.UPSTREAM_FAILED


def test_any_is_ready_on_the_first_success_while_others_still_run() -> None:
    h = three_parents("any")
    h.failed("a")
    assert h.state("d") is S.PENDING
    assert dispatched(h.completed("b")) == [("d", 1)]
    h.failed("c")  # a later failure of another parent does not touch the running child
    assert h.state("d") is S.QUEUED


def test_any_fails_only_when_every_parent_failed() -> None:
    h = three_parents("any")
    h.failed("a")
    h.failed("b")
    assert h.state("d") is S.PENDING
    h.failed("c")
    assert h.state("d") is S.UPSTREAM_FAILED


def test_all_settled_waits_for_every_parent_then_needs_one_success() -> None:
    h = three_parents("all_settled")
    h.completed("a")
    h.failed("b")
    assert h.state("d") is S.PENDING
    assert dispatched(h.failed("c")) == [("d", 1)]

    h = three_parents("all_settled")
    for name in "abc":
        h.failed(name)
    assert h.state("d") is S.UPSTREAM_FAILED


def test_n_of_parents() -> None:
    h = three_parents(2)
    h.completed("a")
    assert h.state("d") is S.PENDING
    h.completed("b")
    assert h.state("d") is S.QUEUED

    h = three_parents(2)
    h.completed("a")
    h.failed("b")
    assert h.state("d") is S.PENDING  # c can still make it 2
    h.failed("c")
    assert h.state("d") is S.UPSTREAM_FAILED


@pytest.mark.parametrize(
    ("policy", "ok", "bad", "expected"),
    [
        ("all", 3, 0, READY),
        ("all", 2, 0, None),
        ("all", 2, 1, UPSTREAM_FAILED),
        ("any", 1, 2, READY),
        ("any", 0, 2, None),
        ("any", 0, 3, UPSTREAM_FAILED),
        ("all_settled", 1, 2, READY),
        ("all_settled", 2, 0, None),
        ("all_settled", 0, 3, UPSTREAM_FAILED),
        (2, 2, 1, READY),
        (2, 1, 1, None),
        (2, 1, 2, UPSTREAM_FAILED),
    ],
)
def test_decide_table(policy: object, ok: int, bad: int, expected: int | None) -> None:
    assert decide(policy, 3, ok, bad) == expected  # type: ignore[arg-type]


def test_skipped_parent_counts_as_satisfied() -> None:
    wf = workflow(
        task("a"),
        task("b", 0, condition="inputs.a == 'go'"),
        task("c", 1),
    )
    h = History(wf)
    h.activate()
    commands = h.completed("a", output="stop")
    assert h.state("b") is S.SKIPPED
    assert h.st.task(1).error == "condition is false: inputs.a == 'go'"
    assert dispatched(commands) == [("c", 1)]


def test_condition_true_dispatches() -> None:
    wf = workflow(task("a"), task("b", 0, condition="inputs.a.score > 0.5"))
    h = History(wf)
    h.activate()
    assert dispatched(h.completed("a", output={"score": 0.9})) == [("b", 1)]


def test_condition_error_skips_with_the_reason() -> None:
    wf = workflow(task("a"), task("b", 0, condition="inputs.a.score > 0.5"))
    h = History(wf)
    h.activate()
    h.completed("a", output="not an object")
    assert h.state("b") is S.SKIPPED
    error = h.st.task(1).error
    assert error is not None
    assert error.startswith("condition error:")


def test_condition_that_does_not_compile_skips() -> None:
    wf = workflow(task("a"), task("b", 0, condition="__import__('os')"))
    h = History(wf)
    h.activate()
    h.completed("a")
    assert h.state("b") is S.SKIPPED
    assert (h.st.task(1).error or "").startswith("condition error:")


def test_condition_sees_parent_state_under_any_policy() -> None:
    wf = workflow(
        task("a"),
        task("b"),
        task("c", 0, 1, policy="all_settled", condition='state("a") == "failed"'),
    )
    h = History(wf)
    h.activate()
    h.failed("a")
    assert dispatched(h.completed("b")) == [("c", 1)]


def test_max_parallelism_caps_in_flight_and_releases_fifo() -> None:
    wf = workflow(*(task(f"t{i}") for i in range(5)), max_parallelism=2)
    h = History(wf)
    assert dispatched(h.activate()) == [("t0", 1), ("t1", 1)]
    assert h.st.counts()["ready"] == 3
    h.started("t0")
    assert dispatched(h.completed("t1")) == [("t2", 1)]
    assert dispatched(h.completed("t0")) == [("t3", 1)]
    assert dispatched(h.failed("t2")) == [("t4", 1)]
    assert h.st.in_flight == 2


def test_retry_keeps_its_slot_under_max_parallelism() -> None:
    wf = workflow(task("a", retries=1), task("b"), max_parallelism=1)
    h = History(wf)
    assert dispatched(h.activate()) == [("a", 1)]
    assert dispatched(h.failed("a")) == [("a", 2)]  # b still waits: a's retry holds the slot
    assert dispatched(h.completed("a")) == [("b", 1)]
    h.completed("b")
    assert h.st.status is WorkflowStatus.COMPLETED


def test_ready_task_adopted_by_a_replayed_event_is_not_dispatched_again() -> None:
    wf = workflow(task("a"), task("b"), task("c"), max_parallelism=1)
    h = History(wf)
    assert dispatched(h.activate()) == [("a", 1)]
    # b's attempt 1 was dispatched by a pass whose flush was lost; its start arrives now.
    h.started("b", attempt=1)
    assert h.state("b") is S.RUNNING
    # The slot frees up twice; b's stale ready-queue entry must not cause a second dispatch.
    assert dispatched(h.completed("a")) == []  # a and b were both in flight: still at the cap
    assert dispatched(h.completed("b")) == [("c", 1)]
    h.completed("c")
    assert h.st.status is WorkflowStatus.COMPLETED


def test_completed_child_of_a_reopened_task_keeps_its_result() -> None:
    # a, b -> c (any); a -> d. a fails: c still completes (any), d is upstream_failed.
    wf = workflow(task("a"), task("b"), task("c", 0, 1, policy="any"), task("d", 0))
    h = History(wf)
    h.activate()
    h.failed("a")  # d: upstream_failed
    h.completed("b")
    h.completed("c", output="kept")
    assert h.st.status is WorkflowStatus.FAILED
    assert dispatched(h.retry()) == [("a", 2)]
    assert h.state("c") is S.COMPLETED
    assert h.st.task(2).output is not None
    h.completed("a")
    h.completed("d")
    assert h.st.status is WorkflowStatus.COMPLETED
