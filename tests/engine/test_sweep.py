"""The sweep tick: timeouts, queue timeouts, lost dispatches, missed releases, cancel grace; and it
is level-triggered (a second run at the same time changes nothing)."""

from __future__ import annotations

from shared.codec.state import encode_state
from shared.engine import TIMEOUT_GRACE_S, sweep
from shared.states import TaskState, WorkflowStatus

from .history import History, chain, dispatched, finished, task, workflow

S = TaskState
W = WorkflowStatus


def sweep_twice(h: History, **kw: float) -> list:  # type: ignore[type-arg]
    """Sweep, then sweep again at the same instant and check that the second pass is a no-op."""
    commands = h.sweep(**kw)
    before = encode_state(h.st)
    again = sweep(h.wf, h.st, h.now, lost_dispatch_after_s=kw.get("lost_after_s", 1e9))
    assert again == []
    assert encode_state(h.st) == before
    return commands


def test_running_past_timeout_fails_as_timeout_and_retries() -> None:
    h = History(workflow(task("a", timeout_s=100, retries=1)))
    h.activate()
    h.started("a")
    assert sweep_twice(h, after_s=100 + TIMEOUT_GRACE_S - 5) == []
    commands = sweep_twice(h, after_s=10)
    assert dispatched(commands) == [("a", 2)]
    assert (h.st.task(0).error or "").startswith("attempt 1 failed: timed out")
    h.started("a")
    commands = sweep_twice(h, after_s=1000)
    assert h.state("a") is S.FAILED
    assert finished(commands) == [W.FAILED]


def test_queue_timeout_fails_as_not_started_without_retry() -> None:
    h = History(workflow(task("a", queue_timeout_s=30, retries=3)))
    h.activate()
    assert sweep_twice(h, after_s=10) == []
    commands = sweep_twice(h, after_s=30)
    assert dispatched(commands) == []
    assert h.state("a") is S.FAILED
    assert "queue_timeout_s=30" in (h.st.task(0).error or "")


def test_lost_dispatch_resends_the_same_attempt_once_per_period() -> None:
    h = History(chain(2))
    h.activate()
    assert sweep_twice(h, after_s=10, lost_after_s=60) == []
    commands = sweep_twice(h, after_s=60, lost_after_s=60)
    assert dispatched(commands) == [("t0", 1)]
    assert sweep_twice(h, after_s=30, lost_after_s=60) == []
    assert dispatched(sweep_twice(h, after_s=31, lost_after_s=60)) == [("t0", 1)]
    assert h.attempt("t0") == 1


def test_delayed_retry_is_not_resent_before_it_is_visible() -> None:
    from shared.definition.workflow import RetryPolicy

    h = History(workflow(task("a", retries=1, retry=RetryPolicy(initial_delay_s=600))))
    h.activate()
    h.failed("a")
    assert sweep_twice(h, after_s=300, lost_after_s=60) == []
    assert dispatched(sweep_twice(h, after_s=400, lost_after_s=60)) == [("a", 2)]


def test_sweep_releases_ready_tasks_into_free_slots() -> None:
    h = History(workflow(task("a"), task("b"), max_parallelism=1))
    h.activate()
    # Simulate a missed release: the slot is free (a finished) but b was never dispatched.
    h.st.move(0, 4)  # COMPLETED, without the engine's release
    commands = sweep_twice(h)
    assert dispatched(commands) == [("b", 1)]


def test_cancel_grace_gives_up_on_running_tasks() -> None:
    h = History(workflow(task("a"), task("b")))
    h.activate()
    h.started("a")
    h.started("b")
    h.cancel()
    assert sweep_twice(h, after_s=100, cancel_grace_s=600) == []
    commands = sweep_twice(h, after_s=600, cancel_grace_s=600)
    assert finished(commands) == [W.CANCELLED]
    assert h.states() == {"a": S.CANCELLED, "b": S.CANCELLED}


def test_sweep_leaves_pending_and_finished_workflows_alone() -> None:
    h = History(chain(1))
    assert h.sweep(after_s=1e6, lost_after_s=0) == []
    h.activate()
    h.completed("t0")
    assert h.sweep(after_s=1e6, lost_after_s=0) == []
