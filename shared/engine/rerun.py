"""Rerun from failure (the ``retry`` event): reopen what did not succeed and start the next run.

Reopened tasks go back to PENDING with their previous run forgotten (``RuntimeState.reopen``), their
children's counters repaired; tasks whose policy is already met are decided at once. A reopened
task's attempts go on from ``attempt_bounds.rerun_base``: past its stored attempt, and for a
cancelled task past every attempt its run may have sent.
"""

from __future__ import annotations

from shared.engine.attempt_bounds import rerun_base
from shared.engine.state import COMPLETED, IS_OK, IS_TERMINAL, PENDING
from shared.engine.step import Step
from shared.states import WorkflowStatus


def _list_producers(step: Step, reopened: list[int]) -> list[int]:
    """The completed sources of the reopened ``foreach_from`` tasks whose list was rejected:
    rerunning such a task alone would reject the same list, so its source runs again too."""
    st, tasks = step.st, step.wf.tasks
    found: list[int] = []
    for task in reopened:
        spec = tasks[task].expand
        captured = st.lists.get(task)
        rejected = captured is not None and captured.error is not None
        if spec is not None and rejected and st.codes[spec.source] == COMPLETED:
            found.append(spec.source)
    return found


def rerun(step: Step, run: int) -> None:
    """Rerun from failure: reopen failed/upstream_failed/cancelled tasks and the not-completed
    descendants reached through them (and the producers of rejected foreach_from lists), repair
    their counters and their children's, start run+1."""
    st, wf = step.st, step.wf
    if st.status not in (WorkflowStatus.FAILED, WorkflowStatus.CANCELLED) or run != st.run:
        return
    codes, children = st.codes, wf.children
    reopen: list[int] = []
    seen = bytearray(len(codes))
    for task in range(len(codes)):
        if IS_TERMINAL[codes[task]] and not IS_OK[codes[task]]:
            seen[task] = 1
            reopen.append(task)
    for source in _list_producers(step, reopen):
        if not seen[source]:
            seen[source] = 1
            reopen.append(source)
    at = 0
    while at < len(reopen):  # reopen grows as descendants are found (breadth-first)
        for child in children[reopen[at]]:
            if not seen[child] and codes[child] != COMPLETED:
                seen[child] = 1
                reopen.append(child)
        at += 1
    step.changed = True
    for task in reopen:
        counter = st.n_ok if IS_OK[codes[task]] else st.n_bad
        for child in children[task]:
            counter[child] -= 1
        st.reopen(task, rerun_base(wf, st, task))
    st.run += 1
    st.status = WorkflowStatus.RUNNING
    st.cancel_requested = False
    st.cancel_requested_at = None
    st.finished_at = None
    st.error = None
    work: list[int] = []
    for task in reopen:
        if codes[task] == PENDING:
            step.evaluate(task, work)
    step.propagate(work)
