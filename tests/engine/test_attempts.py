"""Issue 11 §2: an event's attempt must be one the coordinator dispatched.

That is the stored attempt (or an older one: a duplicate), an attempt ahead of it that a pass which
crashed before its flush can have sent (within the run's retry budget), or the documented rerun
race (``premature``). Anything else is a MessageError (dead-lettered) and changes nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from shared.codec.state import encode_state
from shared.engine import apply, premature
from shared.engine.commands import Dispatch
from shared.errors import MessageError
from shared.limits import MAX_COUNTER
from shared.messages import TaskCompletedEvent, TaskFailedEvent, TaskStartedEvent
from shared.states import TaskState, WorkflowStatus

from .history import WF_ID, History, task, workflow

S = TaskState


def _completion(name: str, attempt: int, at: float) -> TaskCompletedEvent:
    return TaskCompletedEvent(
        workflow_id=WF_ID, task=name, attempt=attempt, started_at=at, finished_at=at
    )


def _rejected(h: History, event: TaskCompletedEvent | TaskStartedEvent, match: str) -> None:
    before = encode_state(h.st)
    with pytest.raises(MessageError, match=match):
        apply(h.wf, h.st, event, h.now + 1)
    assert encode_state(h.st) == before


def test_an_attempt_far_ahead_is_rejected_not_adopted() -> None:
    h = History(workflow(task("a", retries=2), task("b", 0)))
    h.activate()
    _rejected(
        h,
        _completion("a", 2**31, h.now),
        r"attempt 2147483648, which was never dispatched: the task is queued at attempt 1"
        r" and no attempt above 3 can have been sent",
    )
    assert h.state("b") is S.PENDING


def test_attempts_within_the_budget_are_adopted_beyond_it_rejected() -> None:
    h = History(workflow(task("a", retries=1)))
    h.activate()
    _rejected(h, _completion("a", 3, h.now), "attempt 3, which was never dispatched")
    start = TaskStartedEvent(workflow_id=WF_ID, task="a", attempt=3, started_at=h.now)
    _rejected(h, start, "started event for task 'a' reports attempt 3")
    h.started("a", attempt=2)  # a retry sent by a pass that crashed before its flush
    assert (h.state("a"), h.attempt("a")) == (S.RUNNING, 2)


def test_a_rerun_extends_the_budget_by_one_run() -> None:
    h = History(workflow(task("a")))
    h.activate()
    h.failed("a")
    assert h.st.status is WorkflowStatus.FAILED
    # Before the rerun is applied, attempt 2 is the documented race: premature, kept on the queue.
    assert premature(h.wf, h.st, _completion("a", 2, h.now))
    assert apply(h.wf, h.st, _completion("a", 1, h.now), h.now) == []  # a duplicate: ignored
    # Attempt 3 cannot come from one lost rerun of a task without retries.
    assert not premature(h.wf, h.st, _completion("a", 3, h.now))
    _rejected(h, _completion("a", 3, h.now), "the task is failed at attempt 1")
    h.retry()
    _rejected(h, _completion("a", 3, h.now), "no attempt above 2 can have been sent")
    h.completed("a", attempt=2)
    assert h.st.status is WorkflowStatus.COMPLETED


def test_a_rejected_event_does_not_activate_a_pending_workflow() -> None:
    h = History(workflow(task("a")))
    _rejected(h, _completion("a", 5, h.now), "never dispatched")
    assert h.st.status is WorkflowStatus.PENDING


# Attempts beyond MAX_COUNTER never reach the engine: decode_event rejects them (shared.messages).
@given(retries=hs.integers(0, 3), dispatched=hs.integers(1, 4), attempt=hs.integers(1, MAX_COUNTER))
def test_an_attempt_is_applied_only_if_it_can_have_been_dispatched(
    retries: int, dispatched: int, attempt: int
) -> None:
    h = History(workflow(task("a", retries=retries)))
    h.activate()
    for _ in range(min(dispatched, retries + 1) - 1):
        h.failed("a")  # each failure dispatches the next attempt
    current = h.attempt("a")
    event = _completion("a", attempt, h.now)
    if attempt > retries + 1:
        _rejected(h, event, "never dispatched")
        return
    apply(h.wf, h.st, event, h.now + 1)
    assert h.state("a") is (S.COMPLETED if attempt >= current else S.QUEUED)


def test_a_report_for_a_task_still_waiting_on_its_parents_waits_for_them() -> None:
    """Found by the simulation (docs/simulation.md): a pass applied a's completion, sent b/1 and
    died before its flush; b/1's failure then arrived before a's redelivered completion. Applied
    at once, b was adopted from pending and retried as b/2 without a's output — a child run
    before its parent, under ``dep_policy: all``. The report waits on the queue instead."""
    h = History(workflow(task("a"), task("b", 0, retries=1)))
    h.activate()
    failure = TaskFailedEvent(
        workflow_id=WF_ID, task="b", attempt=1, started_at=h.now, finished_at=h.now,
        reason="exit", exit_code=1,
    )  # fmt: skip
    assert h.st.task(1).state is S.PENDING
    assert premature(h.wf, h.st, failure)
    h.completed("a")
    assert not premature(h.wf, h.st, failure)
    commands = apply(h.wf, h.st, failure, h.now + 1)
    assert [(c.name, c.attempt) for c in commands if isinstance(c, Dispatch)] == [("b", 2)]
