"""Which attempt numbers of a task the coordinator can have sent, and where a rerun starts.

Attempt numbers name a task's claims, logs and outputs, so they are never reused. The subtle part
is a dispatch sent by a pass that died before its flush: it exists, on a task queue, while the
stored state does not show it. These bounds are what the engine knows about such dispatches.
"""

from __future__ import annotations

from shared.definition.workflow import CompiledWorkflow
from shared.engine.state import CANCELLED, FAILED, RuntimeState
from shared.states import WorkflowStatus

_CANCELLING = (WorkflowStatus.CANCELLING, WorkflowStatus.CANCELLED)


def records_upstream(wf: CompiledWorkflow, state: RuntimeState, task: int) -> bool:
    """Whether ``task``'s attempts carry an upstream digest the state records: any task with
    parents, in a state with blobs per incarnation (older states are written by the rules they
    had). Two sends of one attempt can carry different upstreams: under a policy other than
    ``all`` which parents had finished decides it, and under any policy a parent may have run
    again since (its report refused for other inputs: simulation seed 3708833)."""
    return bool(wf.tasks[task].parents) and state.incarnation_blobs


def dispatchable_attempts(wf: CompiledWorkflow, state: RuntimeState, task: int) -> int:
    """The highest attempt of ``task`` the coordinator can have dispatched in the current run:
    the attempts before this run plus the run's budget (``num_retries + 1``). Only a pass that
    crashed before its flush can have sent an attempt above the stored one, and it cannot have
    gone past the budget — but for one attempt that does not spend it: a report that ran on
    other inputs than the state recorded (``records_upstream``) is run again as a fresh attempt
    (the base moves), which that pass may have sent. A rerun this state has not seen is
    ``premature`` instead."""
    fresh = 1 if records_upstream(wf, state, task) else 0
    return state.base_attempt.get(task, 0) + wf.tasks[task].num_retries + 1 + fresh


def rerun_base(wf: CompiledWorkflow, state: RuntimeState, task: int) -> int:
    """The attempt a rerun numbers terminal ``task``'s next attempts after: its stored attempt,
    or, for a task a cancel settled, the highest its run can have dispatched.

    A cancel can overtake a lost pass: the pass applied a failure and sent the retry (or applied
    a parent's result and sent the child), then died before its flush; the cancel was applied
    before that event came back, and the task ended cancelled at its stored attempt — or
    failed, when the failure came back after the cancel: a failure under a cancel is not
    retried (simulation seed 1038). The sent attempt is still out there, and its claim is held.
    A rerun that sent the same number again would be refused as a duplicate by every worker.
    Only a cancel settles a task while such a dispatch may be out (every other outcome is
    decided by the same events the lost pass applied, and re-applying them sends the same
    attempt), so other tasks go on from where they stopped."""
    current = state.attempt[task]
    code = state.codes[task]
    under_cancel = state.cancel_requested or state.status in _CANCELLING
    if code != CANCELLED and not (code == FAILED and under_cancel):
        return current
    return max(current, dispatchable_attempts(wf, state, task))
