"""The task-state transition table (``shared.engine.task_moves``) and the named state operations:
every
move the engine makes is in the table, an illegal move is refused, and the per-attempt fields are
reset the same way by a retry, an adopted attempt and a rerun."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from shared.definition.workflow import CompiledWorkflow
from shared.engine import new_state
from shared.engine.state import TASK_STATES, RuntimeState
from shared.engine.task_moves import LEGAL_MOVES, is_legal
from shared.errors import IllegalMoveError
from shared.messages import ActivateEvent
from shared.names import ResourceNames
from shared.states import TERMINAL_TASK_STATES, TaskState
from tests.engine.worlds import OUTCOMES, WF, World, dags

from .history import History, task, workflow

S = TaskState


@contextmanager
def recorded_moves() -> Iterator[list[tuple[TaskState, TaskState]]]:
    """Record every (old, new) state change made through ``RuntimeState.move``."""
    seen: list[tuple[TaskState, TaskState]] = []
    original = RuntimeState.move

    def move(self: RuntimeState, i: int, code: int) -> None:
        old = self.codes[i]
        original(self, i, code)
        if old != code:
            seen.append((TASK_STATES[old], TASK_STATES[code]))

    RuntimeState.move = move  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        RuntimeState.move = original  # type: ignore[method-assign]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wf=dags(), data=hs.data())
def test_every_move_of_a_random_history_is_in_the_table(
    wf: CompiledWorkflow, data: hs.DataObject
) -> None:
    with recorded_moves() as seen:
        world = World(wf, new_state(wf, WF, 1000.0))
        world.flush()
        world.apply(ActivateEvent(workflow_id=WF))
        for _ in range(data.draw(hs.integers(0, 30), label="steps")):
            if world.outstanding:
                key = data.draw(hs.sampled_from(sorted(world.outstanding)), label="attempt")
                world.report(key, data.draw(hs.sampled_from(OUTCOMES), label="outcome"))
            elif world.st.status.is_terminal:
                world.flush()
                world.apply_rerun()
            else:
                world.sweep(1000.0)
    for old, new in seen:
        assert new in LEGAL_MOVES[old], (old, new)


def test_terminal_states_leave_only_by_a_rerun() -> None:
    for state in TERMINAL_TASK_STATES:
        assert LEGAL_MOVES[state] <= {S.PENDING}
    assert all(is_legal(s, s) for s in TaskState)


def test_an_illegal_move_is_refused_and_changes_nothing() -> None:
    h = History(workflow(task("a")))
    h.activate()
    h.completed("a")
    before = (bytes(h.st.codes), list(h.st.tally), h.st.n_terminal)
    with pytest.raises(IllegalMoveError, match="completed -> running is not a legal move"):
        h.st.record_start(0, 5, "w")
    assert (bytes(h.st.codes), list(h.st.tally), h.st.n_terminal) == before


def _attempt_fields(h: History, name: str) -> tuple[object, ...]:
    view = h.st.task(h.wf.index[name])
    return view.started_at, view.finished_at, view.exit_code, view.worker, view.log_blob


def test_retry_adoption_and_rerun_reset_the_same_attempt_fields() -> None:
    h = History(workflow(task("a", retries=1), task("b", retries=1), task("c")))
    h.activate()
    # A retry: the failed attempt's worker, log and times are gone from the new attempt.
    h.started("a")
    h.st.log_blob[0] = ResourceNames.log_blob("wf-1", "a", 1)
    h.failed("a")
    assert _attempt_fields(h, "a") == (None, None, None, None, None)
    # An adopted attempt (ahead of the state) starts from the same blank fields.
    h.started("b", attempt=1)
    h.st.log_blob[1] = ResourceNames.log_blob("wf-1", "b", 1)
    h.started("b", attempt=2)
    view = h.st.task(1)
    assert (view.attempt, view.finished_at, view.exit_code, view.log_blob) == (2, None, None, None)
    # A rerun reopens a failed task with the same blank fields (and no error or output).
    h.failed("b")
    h.failed("a")
    h.completed("c")
    h.retry()
    assert _attempt_fields(h, "b") == (None, None, None, None, None)
    assert h.st.task(1).error is None
