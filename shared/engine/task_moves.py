"""The legal task-state moves, written down once (as h11's ``_state.py`` does for HTTP).

Every change of a task's state goes through ``RuntimeState.move`` (or one of the named operations
built on it), which refuses a move that is not in ``LEGAL_MOVES`` with ``IllegalMoveError``. The
engine's property tests drive random histories through it, so a move the engine makes that this
table does not allow fails the suite.
"""

from __future__ import annotations

from shared.states import TaskState

_P, _R, _Q, _RUN = TaskState.PENDING, TaskState.READY, TaskState.QUEUED, TaskState.RUNNING
_DONE, _FAIL, _SKIP = TaskState.COMPLETED, TaskState.FAILED, TaskState.SKIPPED
_UP, _CANC = TaskState.UPSTREAM_FAILED, TaskState.CANCELLED

LEGAL_MOVES: dict[TaskState, frozenset[TaskState]] = {
    # Decided by its dependency policy and condition, or cancelled with the workflow. QUEUED: an
    # event for an attempt ahead of the state (dispatched by a pass that crashed before it flushed)
    # is adopted. COMPLETED / FAILED: a foreach_from task expanded, or its list could not be
    # expanded (it never runs itself). FAILED also: its condition needs more than its evaluation
    # budget.
    _P: frozenset({_R, _SKIP, _UP, _CANC, _Q, _DONE, _FAIL}),
    # Dispatched when a max_parallelism slot frees; QUEUED also by adoption.
    _R: frozenset({_Q, _CANC}),
    # A worker reports a start, a result, or the attempt fails: retried (stays QUEUED), failed
    # for good, or cancelled.
    _Q: frozenset({_RUN, _DONE, _FAIL, _CANC}),
    # The attempt ends; a retry sends the next attempt (QUEUED again).
    _RUN: frozenset({_Q, _DONE, _FAIL, _CANC}),
    # Terminal states leave only through a rerun from failure, which reopens the tasks that did
    # not succeed (and skipped descendants of those) as PENDING. A completed task reopens only when
    # it produced a foreach_from list that was rejected (so that it can produce a new one).
    _DONE: frozenset({_P}),
    _FAIL: frozenset({_P}),
    _SKIP: frozenset({_P}),
    _UP: frozenset({_P}),
    _CANC: frozenset({_P}),
}
"""State -> the states a task may move to from it. Staying in a state is not a move."""


def is_legal(old: TaskState, new: TaskState) -> bool:
    """Whether a task may move from ``old`` to ``new`` (staying put is always allowed)."""
    return old is new or new in LEGAL_MOVES[old]
