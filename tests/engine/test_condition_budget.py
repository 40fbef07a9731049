"""A condition over its evaluation budget fails its task (with the reason) in one bounded step;
it does not skip it, and it does not hold the coordinator."""

from __future__ import annotations

from shared.states import TaskState, WorkflowStatus

from .history import History, dispatched, task, workflow

S = TaskState
PARENTS = 120
"""Enough parents that comparing whole (up to 4 KiB) outputs is over the budget."""


def test_an_over_budget_condition_fails_its_task_and_its_children_do_not_run() -> None:
    # A workflow that skipped validation (a stored definition, a dynamic fan-out) still cannot
    # make the engine spend more than the budget: the condition fails when it is compiled.
    parents = [task(f"p{i}") for i in range(PARENTS)]
    wf = workflow(
        *parents,
        task("join", *range(PARENTS), condition='all(inputs["p*"] == inputs.p0)'),
        task("after", PARENTS),
    )
    h = History(wf)
    h.activate()
    for i in range(PARENTS):
        commands = h.completed(f"p{i}", output=[0] * 1000)
    assert dispatched(commands) == []
    assert h.state("join") is S.FAILED
    error = h.st.task(PARENTS).error or ""
    assert error.startswith("condition over budget: the condition could take up to")
    assert h.state("after") is S.UPSTREAM_FAILED
    assert h.st.status is WorkflowStatus.FAILED


def test_a_rerun_evaluates_the_condition_again_and_fails_the_same_way() -> None:
    wf = workflow(
        *[task(f"p{i}") for i in range(PARENTS)],
        task("join", *range(PARENTS), condition='any(inputs["p*"] == inputs.p0)'),
    )
    h = History(wf)
    h.activate()
    for i in range(PARENTS):
        h.completed(f"p{i}")
    assert h.state("join") is S.FAILED
    h.retry()
    assert h.state("join") is S.FAILED
