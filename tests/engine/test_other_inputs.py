"""The engine's side of upstream digests (tests/coordinator/test_other_inputs.py drives the
simulation's seed 2169766 through a coordinator): two sends of one attempt, by a pass whose state
write was lost and by the next one, carry different upstreams (under a policy other than ``all``
which parents had finished decides it; under any policy a parent may have run again since); a
report of the other copy is not taken as the state's attempt."""

from __future__ import annotations

from typing import Any

import pytest

from shared.codec.state import decode_state, encode_state
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine import apply, new_state
from shared.engine.commands import Command, Dispatch, OtherInputs
from shared.engine.state import RuntimeState
from shared.messages import (
    ActivateEvent,
    CancelEvent,
    OutputRef,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
    upstream_digest,
)
from shared.states import TaskState, WorkflowStatus

WF = "wf-ups"
INC = 7


def _wf(policy: Any = "any", retries: int = 0) -> CompiledWorkflow:
    tasks = [
        TaskDef(name="t0", cmd="true", queue="cpu"),
        TaskDef(name="t2", cmd="true", queue="cpu"),
        TaskDef(
            name="t3",
            cmd="true",
            queue="cpu",
            parents=(0, 1),
            dep_policy=policy,
            num_retries=retries,
        ),
    ]
    return CompiledWorkflow.of("ups", tasks)


def _done(task: str, attempt: int = 1, **kw: Any) -> TaskCompletedEvent:
    return TaskCompletedEvent(
        workflow_id=WF, task=task, attempt=attempt, incarnation=INC, started_at=10.0,
        finished_at=11.0, output=OutputRef(inline={"from": task}, size=14), **kw,
    )  # fmt: skip


def _t3(commands: list[Command]) -> Dispatch:
    (dispatch,) = [c for c in commands if isinstance(c, Dispatch) and c.name == "t3"]
    return dispatch


def _two_sends(wf: CompiledWorkflow) -> tuple[RuntimeState, Dispatch, Dispatch]:
    """The state after the second pass, the lost pass's send of t3/1 and the second pass's."""
    st = new_state(wf, WF, 1.0, incarnation=INC)
    apply(wf, st, ActivateEvent(workflow_id=WF), 2.0)
    flushed = encode_state(st)
    lost = _t3(apply(wf, decode_state(flushed, wf), _done("t2"), 3.0))
    st = decode_state(flushed, wf)
    kept = _t3(apply(wf, st, _done("t0"), 4.0))
    st = decode_state(encode_state(st), wf)  # what the second pass flushed
    return st, lost, kept


def test_the_two_sends_carry_different_digests_and_the_state_records_its_own() -> None:
    wf = _wf()
    st, lost, kept = _two_sends(wf)
    assert (lost.attempt, kept.attempt) == (1, 1)
    assert lost.upstream_digest == upstream_digest(lost.upstream) != kept.upstream_digest
    assert st.upstream_digests == {2: kept.upstream_digest}


@pytest.mark.parametrize("policy", ["any", 1])
def test_a_report_that_ran_on_the_other_copys_inputs_runs_the_task_again(policy: Any) -> None:
    wf = _wf(policy)
    st, lost, kept = _two_sends(wf)
    report = _done("t3", upstream_digest=lost.upstream_digest)
    commands = apply(wf, st, report, 5.0)
    assert OtherInputs(2, 1) in commands
    again = _t3(commands)
    assert again.attempt == 2
    assert again.upstream == kept.upstream
    assert again.upstream_digest == kept.upstream_digest
    assert st.state_of(2) is TaskState.QUEUED
    assert 2 not in st.outputs
    assert st.base_attempt[2] == 1  # a fresh attempt: the retry budget is not spent
    (past,) = st.history[2]
    assert past.attempt == 1
    assert past.worker is None
    assert "other inputs" in (past.error or "")
    assert apply(wf, st, report, 6.0) == []  # a duplicate of it: stale now
    apply(wf, st, _done("t3", 2, upstream_digest=kept.upstream_digest), 7.0)
    assert st.state_of(2) is TaskState.COMPLETED


def test_a_failure_that_ran_on_other_inputs_does_not_spend_the_budget() -> None:
    wf = _wf(retries=0)
    st, lost, _ = _two_sends(wf)
    failure = TaskFailedEvent(
        workflow_id=WF, task="t3", attempt=1, incarnation=INC, finished_at=5.0, exit_code=1,
        upstream_digest=lost.upstream_digest,
    )  # fmt: skip
    assert _t3(apply(wf, st, failure, 5.0)).attempt == 2
    assert st.state_of(2) is TaskState.QUEUED


def test_under_a_cancel_the_report_cancels_the_task() -> None:
    wf = _wf()
    st, lost, _ = _two_sends(wf)
    started = TaskStartedEvent(workflow_id=WF, task="t3", attempt=1, incarnation=INC, started_at=5)
    apply(wf, st, started, 5.0)
    apply(wf, st, CancelEvent(workflow_id=WF), 6.0)
    assert st.state_of(2) is TaskState.RUNNING
    commands = apply(wf, st, _done("t3", upstream_digest=lost.upstream_digest), 7.0)
    assert OtherInputs(2, 1) in commands
    assert not [c for c in commands if isinstance(c, Dispatch)]
    assert st.state_of(2) is TaskState.CANCELLED
    assert "other inputs" in (st.task(2).error or "")


def test_the_recorded_digest_and_an_older_workers_report_are_taken() -> None:
    wf = _wf()
    st, _, kept = _two_sends(wf)
    same = st  # the same inputs: taken
    apply(wf, same, _done("t3", upstream_digest=kept.upstream_digest), 5.0)
    assert same.state_of(2) is TaskState.COMPLETED
    older, _, _ = _two_sends(wf)  # no digest (an older worker): taken, as before digests
    assert not [c for c in apply(wf, older, _done("t3"), 5.0) if isinstance(c, OtherInputs)]
    assert older.state_of(2) is TaskState.COMPLETED


def test_an_adopted_attempt_is_checked_against_the_upstream_the_state_would_send() -> None:
    """t3/2 was sent by a lost pass (a retry): the state takes it as sent on what it would send
    now, so a report that ran on other inputs is not taken."""
    wf = _wf(retries=2)
    st = new_state(wf, WF, 1.0, incarnation=INC)
    apply(wf, st, ActivateEvent(workflow_id=WF), 2.0)
    first = _t3(apply(wf, st, _done("t0"), 3.0))
    apply(wf, st, _done("t2"), 4.0)  # now the state would send both outputs
    report = _done("t3", 2, upstream_digest=first.upstream_digest)  # ran on t0's only
    commands = apply(wf, st, report, 5.0)
    assert OtherInputs(2, 2) in commands
    assert _t3(commands).attempt == 3
    assert st.status is WorkflowStatus.RUNNING


def test_a_child_under_all_of_a_parent_run_again_for_other_inputs_is_checked_too() -> None:
    """Simulation seed 3708833 (a soak): t2 (``any`` of t0, t1) ran on a lost pass's inputs; a
    pass that had taken that report (from its cached state) sent t3 (``all`` of t2) attempt 1 on
    t2's first output and lost its write; the stored state refused t2's report (other inputs), ran
    t2 again and sent t3 attempt 1 on the second output; the worker kept the first copy. Under
    ``all`` no digest was carried, so t3's report was taken: it had run on an output the state
    does not hold. A parent's output can change after a send under any policy, so every task with
    parents carries one."""
    wf = CompiledWorkflow.of("ups", [
        TaskDef(name="t0", cmd="true", queue="cpu"),
        TaskDef(name="t1", cmd="true", queue="cpu"),
        TaskDef(name="t2", cmd="true", queue="cpu", parents=(0, 1), dep_policy="any"),
        TaskDef(name="t3", cmd="true", queue="cpu", parents=(2,)),
    ])  # fmt: skip

    def t2_done(attempt: int, digest: str | None) -> TaskCompletedEvent:
        return TaskCompletedEvent(
            workflow_id=WF, task="t2", attempt=attempt, incarnation=INC, started_at=10.0,
            finished_at=11.0, output=OutputRef(inline={"run": attempt}, size=9),
            upstream_digest=digest,
        )  # fmt: skip

    def sent(commands: list[Command], name: str) -> Dispatch:
        (dispatch,) = [c for c in commands if isinstance(c, Dispatch) and c.name == name]
        return dispatch

    st = new_state(wf, WF, 1.0, incarnation=INC)
    apply(wf, st, ActivateEvent(workflow_id=WF), 2.0)
    flushed = encode_state(st)
    cached = decode_state(flushed, wf)  # the lost passes' view
    t2_lost = sent(apply(wf, cached, _done("t1"), 3.0), "t2")
    t3_lost = sent(apply(wf, cached, t2_done(1, t2_lost.upstream_digest), 4.0), "t3")
    st = decode_state(flushed, wf)  # the stored state's passes
    t2_kept = sent(apply(wf, st, _done("t0"), 5.0), "t2")
    assert t2_kept.upstream_digest != t2_lost.upstream_digest
    again = sent(apply(wf, st, t2_done(1, t2_lost.upstream_digest), 6.0), "t2")
    assert again.attempt == 2  # t2 ran on other inputs: run again
    t3_kept = sent(apply(wf, st, t2_done(2, again.upstream_digest), 7.0), "t3")
    assert (t3_lost.attempt, t3_kept.attempt) == (1, 1)
    assert t3_lost.upstream != t3_kept.upstream
    assert None is not t3_lost.upstream_digest != t3_kept.upstream_digest
    report = _done("t3", upstream_digest=t3_lost.upstream_digest)
    assert OtherInputs(3, 1) in apply(wf, st, report, 8.0)
    assert st.state_of(3) is TaskState.QUEUED  # on t2's second output, as the state records
    assert 3 not in st.outputs


def test_a_fresh_attempt_sent_by_a_lost_pass_is_adopted_not_dead_lettered() -> None:
    """A pass ran t3 again for other inputs (attempt 2, past the budget of a task without
    retries: it moved the base) and lost its state write; attempt 2's report, on the stored
    state's inputs, is adopted within the bound (and the base moves: the budget holds)."""
    wf = _wf(retries=0)
    st, lost, _ = _two_sends(wf)
    flushed = encode_state(st)
    lost_pass = decode_state(flushed, wf)
    again = _t3(apply(wf, lost_pass, _done("t3", upstream_digest=lost.upstream_digest), 5.0))
    assert again.attempt == 2
    st = decode_state(flushed, wf)  # that pass's write was lost
    apply(wf, st, _done("t3", 2, upstream_digest=again.upstream_digest), 6.0)
    assert st.state_of(2) is TaskState.COMPLETED
    assert st.attempt[2] - st.base_attempt[2] <= 1
