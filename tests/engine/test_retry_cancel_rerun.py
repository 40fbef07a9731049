"""Retries with backoff, cancellation and rerun-from-failure, as event histories."""

from __future__ import annotations

import pytest

from shared.codec.state import encode_state
from shared.definition.workflow import RetryPolicy
from shared.engine import premature
from shared.engine.backoff import retry_delay_s
from shared.engine.commands import Command, Dispatch
from shared.messages import RetryEvent, TaskCompletedEvent, TaskFailedEvent, TaskStartedEvent
from shared.states import TaskState, WorkflowStatus

from .history import WF_ID, History, chain, dispatched, finished, task, workflow

S = TaskState
W = WorkflowStatus


def test_failure_with_budget_is_redispatched_with_the_next_attempt() -> None:
    h = History(workflow(task("a", retries=2)))
    h.activate()
    h.started("a")
    commands = h.failed("a", exit_code=1, error="flaky")
    assert dispatched(commands) == [("a", 2)]
    assert h.state("a") is S.QUEUED
    view = h.st.task(0)
    assert view.error == "attempt 1 failed: exit code 1: flaky"
    assert (view.started_at, view.exit_code, view.worker) == (None, None, None)
    assert dispatched(h.failed("a")) == [("a", 3)]
    assert dispatched(h.failed("a")) == []  # 3 attempts = num_retries + 1: budget spent
    assert h.state("a") is S.FAILED
    assert h.st.status is W.FAILED


def test_retry_delay_follows_the_backoff_policy() -> None:
    policy = RetryPolicy(initial_delay_s=10, multiplier=3, max_delay_s=50, jitter=0.5)
    h = History(workflow(task("a", retries=3, retry=policy)))
    h.activate()
    delays = []
    for _ in range(3):
        (command,) = h.failed("a", reason="timeout")
        assert isinstance(command, Dispatch)
        delays.append(command.delay_s)
        assert h.st.task(0).queued_at == pytest.approx(h.now + command.delay_s, abs=1e-3)
    expected = [
        retry_delay_s(policy, n, workflow_id=WF_ID, task="a", attempt=n + 1) for n in (1, 2, 3)
    ]
    assert delays == expected
    assert 5 <= delays[0] <= 10
    assert 15 <= delays[1] <= 30
    assert 25 <= delays[2] <= 50


def test_only_listed_exit_codes_are_retried() -> None:
    policy = RetryPolicy(retry_on_exit_codes=(75,))
    h = History(workflow(task("a", retries=2, retry=policy), task("b", retries=2, retry=policy)))
    h.activate()
    assert dispatched(h.failed("a", exit_code=75)) == [("a", 2)]
    assert dispatched(h.failed("b", exit_code=1)) == []
    assert h.state("b") is S.FAILED
    assert dispatched(h.failed("a", reason="error", error="bad cwd")) == [("a", 3)]  # always


def test_not_started_and_cancelled_are_never_retried() -> None:
    h = History(workflow(task("a", retries=5), task("b", retries=5)))
    h.activate()
    assert dispatched(h.failed("a", reason="not_started")) == []
    assert h.state("a") is S.FAILED
    assert dispatched(h.failed("b", reason="cancelled")) == []
    assert h.state("b") is S.CANCELLED


def test_cancel_cancels_what_has_not_started_and_waits_for_running_tasks() -> None:
    h = History(workflow(task("a"), task("b"), task("c", 0), task("d", 1, retries=3)))
    h.activate()
    h.started("a")
    commands = h.cancel("user asked")
    assert commands == []
    assert h.st.status is W.CANCELLING
    assert h.st.cancel_requested
    assert h.states() == {"a": S.RUNNING, "b": S.CANCELLED, "c": S.CANCELLED, "d": S.CANCELLED}
    assert h.cancel() == []  # a second cancel is a no-op
    assert h.completed("b") == []  # b's message was already out: its completion is ignored
    commands = h.failed("a", reason="cancelled")
    assert finished(commands) == [W.CANCELLED]
    assert h.state("a") is S.CANCELLED
    assert h.st.error == "cancelled: user asked"


def test_running_task_that_completes_during_cancel_stays_completed_and_nothing_is_dispatched() -> (
    None
):
    h = History(chain(2))
    h.activate()
    h.started("t0")
    h.cancel()
    commands = h.completed("t0")
    assert dispatched(commands) == []
    assert finished(commands) == [W.CANCELLED]
    assert h.states() == {"t0": S.COMPLETED, "t1": S.CANCELLED}


def test_failure_during_cancel_is_not_retried() -> None:
    h = History(workflow(task("a", retries=3)))
    h.activate()
    h.started("a")
    h.cancel()
    assert dispatched(h.failed("a")) == []
    assert h.state("a") is S.FAILED
    assert h.st.status is W.CANCELLED


def test_cancel_of_a_pending_or_finished_workflow() -> None:
    h = History(chain(2))
    assert finished(h.cancel()) == [W.CANCELLED]
    assert h.activate() == []  # a late activation does not resurrect it
    h = History(chain(1))
    h.activate()
    h.completed("t0")
    before = encode_state(h.st)
    assert h.cancel() == []
    assert encode_state(h.st) == before


def test_rerun_reopens_failures_and_descendants_keeps_completed_outputs() -> None:
    # a -> b -> c ; a, b -> d (all_settled; skipped by its condition) ; e alone
    wf = workflow(
        task("a"),
        task("b", 0, retries=1),
        task("c", 1),
        task("d", 0, 1, policy="all_settled", condition="inputs.b.ok == true"),
        task("e"),
    )
    h = History(wf)
    h.activate()
    h.completed("a", output={"x": 1})
    h.completed("e")
    h.failed("b")
    h.failed("b")  # attempt 2: budget spent
    assert h.states() == {
        "a": S.COMPLETED,
        "b": S.FAILED,
        "c": S.UPSTREAM_FAILED,
        "d": S.SKIPPED,
        "e": S.COMPLETED,
    }
    assert h.st.status is W.FAILED
    assert h.retry(run=2) == []  # a stale run number: no-op
    commands = h.retry(run=1)
    assert h.st.run == 2
    assert h.status is W.RUNNING
    assert h.st.error is None
    assert dispatched(commands) == [("b", 3)]  # attempt numbers keep growing
    assert h.states()["c"] is S.PENDING
    assert h.states()["d"] is S.PENDING
    assert h.st.task(0).output is not None  # completed tasks keep their outputs
    assert h.retry(run=1) == []  # duplicate retry
    # The retry budget counts again from this run: one retry allowed.
    assert dispatched(h.failed("b")) == [("b", 4)]
    commands = h.completed("b", output={"ok": True})
    assert dispatched(commands) == [("c", 1), ("d", 1)]
    h.completed("c")
    assert finished(h.completed("d")) == [W.COMPLETED]
    assert h.st.counts()["completed"] == 5


def test_every_dispatch_carries_the_run_that_sent_it() -> None:
    """A worker tells a late redelivery (of a run that finished) from an early one (of a rerun the
    stored state does not show yet) by the run its message carries (seed 1906 of the simulation)."""
    h = History(workflow(task("a", retries=1)))

    def runs(commands: list[Command]) -> list[int | None]:
        return [c.run for c in commands if isinstance(c, Dispatch)]

    assert runs(h.activate()) == [1]
    assert runs(h.failed("a")) == [1]  # a retry within the run
    h.failed("a")
    assert h.status is W.FAILED
    assert runs(h.retry()) == [2]  # the rerun's first dispatch
    assert runs(h.failed("a")) == [2]


def test_rerun_of_a_cancelled_workflow_and_of_a_completed_one() -> None:
    h = History(chain(3))
    h.activate()
    h.completed("t0")
    h.cancel()
    assert h.st.status is W.CANCELLED
    commands = h.retry()
    assert dispatched(commands) == [("t1", 2)]  # attempt 1 was dispatched, then cancelled
    assert not h.st.cancel_requested
    h = History(chain(1))
    h.activate()
    h.completed("t0")
    assert h.retry() == []  # only failed or cancelled workflows rerun


def test_a_rerun_numbers_a_cancelled_tasks_attempts_past_what_its_run_may_have_sent() -> None:
    # A pass applied a/1's failure, sent the retry a/2 and died before its flush; the cancel was
    # applied first, so the state has "a" cancelled at attempt 1 and knows nothing of a/2, whose
    # claim a worker holds. The rerun must not send a/2 again (every worker would drop it as a
    # duplicate: tests/coordinator/test_rerun_attempts.py); it starts past attempt 3, the most
    # that run could have sent. "b", cancelled before it was ever sent, starts past attempt 1.
    h = History(workflow(task("a", retries=2), task("b", 0)))
    h.activate()
    h.cancel()
    assert h.states() == {"a": S.CANCELLED, "b": S.CANCELLED}
    lost = TaskFailedEvent(
        workflow_id=WF_ID, task="a", attempt=2, reason="cancelled", finished_at=h.now
    )
    assert not premature(h.wf, h.st, lost)  # the cancelled run's: stale, not a rerun's
    ahead = TaskCompletedEvent(
        workflow_id=WF_ID, task="a", attempt=4, started_at=h.now, finished_at=h.now
    )
    assert premature(h.wf, h.st, ahead)  # the rerun's first attempt, before the retry
    assert dispatched(h.retry()) == [("a", 4)]
    assert h.apply(lost) == []  # stale: changes nothing
    assert h.state("a") is S.QUEUED
    assert dispatched(h.failed("a")) == [("a", 5)]  # the rerun's own budget: 2 retries
    assert dispatched(h.completed("a")) == [("b", 2)]
    assert finished(h.completed("b")) == [W.COMPLETED]


def test_a_rerun_numbers_a_task_that_failed_under_a_cancel_past_what_its_run_may_have_sent() -> (
    None
):
    # The simulation's seed 1038 (with lost connections): a pass applied a/1's failure, sent the
    # retry a/2 and its flush failed (a 503); the cancel was applied, then a/1's failure came
    # back, and under the cancel it is not retried: the state has "a" FAILED at attempt 1 and
    # knows nothing of a/2, whose claim a worker holds and whose report came next. That report
    # is the cancelled run's (stale), not a rerun's, and a rerun must not send a/2 again. A
    # failure applied under a cancel settles a task as a cancel does.
    h = History(workflow(task("a", retries=2)))
    h.activate()
    h.started("a")
    h.cancel()
    assert dispatched(h.failed("a")) == []  # attempt 1, not retried under the cancel
    assert (h.state("a"), h.st.status) == (S.FAILED, W.CANCELLED)
    lost = TaskFailedEvent(
        workflow_id=WF_ID, task="a", attempt=2, reason="exit", exit_code=2, finished_at=h.now
    )
    assert not premature(h.wf, h.st, lost)  # before: held for a rerun that never came
    assert dispatched(h.retry()) == [("a", 4)]  # before: a/2, dropped by every worker
    assert h.apply(lost) == []  # stale: changes nothing
    assert h.state("a") is S.QUEUED


def test_a_rerun_goes_on_from_the_stored_attempt_of_a_task_that_failed() -> None:
    # A failure is decided by the events a lost pass applied too: no attempt can be out past it.
    h = History(workflow(task("a", retries=2, retry=RetryPolicy(retry_on_exit_codes=(75,)))))
    h.activate()
    h.failed("a", exit_code=1)  # not retryable: failed at attempt 1, budget left
    assert dispatched(h.retry()) == [("a", 2)]


def test_rerun_when_a_reopened_task_is_immediately_ready_via_any() -> None:
    wf = workflow(task("a"), task("b"), task("c", 0, 1, policy="any"))
    h = History(wf)
    h.activate()
    h.failed("a")
    h.completed("b")
    h.failed("c")
    assert h.st.status is W.FAILED
    commands = h.retry()
    assert sorted(dispatched(commands)) == [("a", 2), ("c", 2)]


def test_cancel_during_a_delayed_retry_cancels_the_queued_attempt() -> None:
    h = History(workflow(task("a", retries=1, retry=RetryPolicy(initial_delay_s=60))))
    h.activate()
    (command,) = h.failed("a")
    assert isinstance(command, Dispatch)
    assert command.delay_s == 60
    assert finished(h.cancel()) == [W.CANCELLED]
    assert h.state("a") is S.CANCELLED
    assert h.completed("a", attempt=2) == []  # the delayed message ran anyway: ignored


def test_an_event_from_a_rerun_the_state_has_not_seen_is_premature_until_the_retry() -> None:
    # The coordinator applied the retry and dispatched attempt 2, then crashed before flushing:
    # the stored state still has "a" failed at attempt 1 when attempt 2's completion arrives first.
    h = History(workflow(task("a")))
    h.activate()
    h.failed("a")
    assert h.status is W.FAILED
    early = TaskCompletedEvent(
        workflow_id=WF_ID, task="a", attempt=2, started_at=h.now, finished_at=h.now + 1
    )
    assert premature(h.wf, h.st, early)
    before = encode_state(h.st)
    assert h.apply(early) == []  # applied now it would be lost: the task is terminal
    assert encode_state(h.st) == before
    # Once the redelivered retry is applied, the same event is current and completes the workflow.
    assert dispatched(h.retry()) == [("a", 2)]
    assert not premature(h.wf, h.st, early)
    h.apply(early)
    assert h.status is W.COMPLETED


def test_stale_current_and_control_events_are_never_premature() -> None:
    h = History(workflow(task("a", retries=1)))
    h.activate()
    h.failed("a")  # attempt 2 dispatched; the task is not terminal
    for attempt in (1, 2, 3):
        event = TaskStartedEvent(workflow_id=WF_ID, task="a", attempt=attempt, started_at=h.now)
        assert not premature(h.wf, h.st, event)
    h.completed("a")
    stale = TaskFailedEvent(workflow_id=WF_ID, task="a", attempt=1, finished_at=h.now)
    assert not premature(h.wf, h.st, stale)
    assert not premature(h.wf, h.st, RetryEvent(workflow_id=WF_ID, run=1))
