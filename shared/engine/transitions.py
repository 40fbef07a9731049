"""The event transitions: ``new_state`` and ``apply`` (activate, started, completed, failed,
cancel, retry). Each handler reads as the rule it implements; the mechanics live in ``step``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.definition.workflow import CompiledWorkflow
from shared.engine.attempt_bounds import dispatchable_attempts, rerun_base
from shared.engine.capture import UNREAD, capture
from shared.engine.commands import Command, OtherInputs
from shared.engine.expansion import awaits_expansion, expanded
from shared.engine.rerun import rerun
from shared.engine.state import (
    CANCELLED,
    COMPLETED,
    IS_TERMINAL,
    PENDING,
    QUEUED,
    READY,
    RUNNING,
    RuntimeState,
    to_ms,
)
from shared.engine.step import Step
from shared.errors import MessageError
from shared.limits import MAX_CARRIED_DEFINITION_BYTES
from shared.messages import (
    ActivateEvent,
    CancelEvent,
    Event,
    RetryEvent,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
)
from shared.states import WorkflowStatus

_CANCEL_BEFORE_RUN = "cancelled: the workflow was cancelled before this task finished"


def new_state(
    wf: CompiledWorkflow,
    workflow_id: str,
    now: float,
    incarnation: int | None = None,
    definition: bytes | None = None,
) -> RuntimeState:
    """The initial state of a submitted workflow: PENDING, every task pending, run 1, of
    ``incarnation`` (drawn by the caller: the engine takes no randomness of its own).
    ``definition``: the definition blob's bytes, carried by the state when they are at most
    ``MAX_CARRIED_DEFINITION_BYTES`` (and the state has an incarnation: version 9 builds on 6)."""
    state = RuntimeState(workflow_id, len(wf.tasks), now)
    state.names = tuple(wf.index)  # index keys are the task names, in task order
    state.incarnation = incarnation
    state.incarnation_blobs = incarnation is not None  # blobs named per incarnation
    if incarnation is not None and len(definition or b"") <= MAX_CARRIED_DEFINITION_BYTES:
        state.definition = definition
    return state


def other_incarnation(state: RuntimeState, event: Event) -> str | None:
    """Why ``event`` belongs to another workflow of the same id (one purged, then submitted
    again), or None if it belongs to this one. A task event must carry this state's incarnation
    (None only for a state written before incarnations, and then from the same era); a cancel or
    retry event without one (the cancel-poll sweep, an older API) is about whatever the id holds."""
    theirs = getattr(event, "incarnation", None)
    if isinstance(event, ActivateEvent | CancelEvent | RetryEvent) and theirs is None:
        return None
    if theirs == state.incarnation:
        return None
    return (
        f"{event.kind} event of another incarnation of workflow {state.workflow_id!r}"
        f" (incarnation {theirs}, the workflow's is {state.incarnation}): it was purged and"
        " submitted again since, so the event is not applied"
    )


def apply(
    wf: CompiledWorkflow,
    state: RuntimeState,
    event: Event,
    now: float,
    *,
    lists: Mapping[str, Any] | None = None,
) -> list[Command]:
    """Apply one event to ``state`` (in place) at time ``now``; return the commands it causes.

    ``lists`` holds the parsed content of blob outputs that feed a ``foreach_from`` (blob name ->
    value), read by the coordinator: the engine does no I/O.

    Idempotent: a duplicate, stale or out-of-place event changes nothing and returns no commands.
    Raises MessageError (the coordinator dead-letters the event with its message) for an event that
    cannot belong to this workflow: another workflow's id or incarnation (``other_incarnation``),
    an unknown task, or an attempt the coordinator cannot have dispatched (see ``_task_number``).
    """
    if event.workflow_id != state.workflow_id:
        raise MessageError(
            f"{event.kind} event for workflow {event.workflow_id!r} "
            f"applied to workflow {state.workflow_id!r}"
        )
    foreign = other_incarnation(state, event)
    if foreign:
        raise MessageError(foreign)
    step = Step(wf, state, now)
    wf = step.wf  # the definition plus its expansions
    if isinstance(event, ActivateEvent):
        _activate(step)
    elif isinstance(event, CancelEvent):
        _cancel(step, event.reason)
    elif isinstance(event, RetryEvent):
        rerun(step, event.run)
    else:
        task = _task_number(wf, state, event)
        if state.status is WorkflowStatus.PENDING:
            # A task event proves the workflow was activated (the coordinator crashed before it
            # flushed the activation): activate now, re-sending the roots' first attempts.
            _activate(step)
        if _accept(step, task, event.attempt):
            if isinstance(event, TaskStartedEvent):
                _started(step, task, event)
            elif _ran_on_other_inputs(step.st, task, event):
                _other_inputs(step, task, event)
            elif isinstance(event, TaskCompletedEvent):
                _completed(step, task, event, lists or {})
            else:
                _failed(step, task, event)
    step.release()
    step.maybe_finish()
    return step.done()


def premature(wf: CompiledWorkflow, state: RuntimeState, event: Event) -> bool:
    """Whether ``event`` reports an attempt AHEAD of a task that this state has as terminal, or as
    still waiting on its parents, or a task of a ``foreach_from`` expansion this state has not
    made yet (the same crash: the pass that expanded and dispatched it was lost, and the parent's
    completion is being redelivered).

    Only a rerun dispatches an attempt past a terminal one, so such an event comes from a rerun this
    state has not seen: the coordinator crashed after dispatching the rerun but before flushing it,
    and the redelivered retry event is still on its way. Applying the event now would lose it (the
    task is terminal); the coordinator keeps it on the queue until the retry has been applied.
    """
    if not isinstance(event, TaskStartedEvent | TaskCompletedEvent | TaskFailedEvent):
        return False
    wf = expanded(wf, state)
    task = wf.index.get(event.task)
    if event.workflow_id != state.workflow_id or other_incarnation(state, event):
        return False  # not this workflow's at all: ``apply`` rejects it
    if task is None:
        return awaits_expansion(wf, state, event.task)
    if state.codes[task] == PENDING:
        # Still waiting on its parents here, so whoever sent this attempt had applied a parent's
        # result this state has not seen (that pass died before its flush; the parent's event is
        # being redelivered). Adopting it now would retry the task without that parent's output.
        return event.attempt > state.attempt[task]
    if not IS_TERMINAL[state.codes[task]]:
        return False
    # A lost rerun dispatches at most the new run's retry budget past where the rerun starts; an
    # event beyond that is not premature but impossible (``apply`` rejects it). An event between
    # the stored attempt and that start is of a dispatch the cancelled run lost: stale.
    start = rerun_base(wf, state, task)
    return start < event.attempt <= start + wf.tasks[task].num_retries + 1


def _task_number(
    wf: CompiledWorkflow,
    state: RuntimeState,
    event: TaskStartedEvent | TaskCompletedEvent | TaskFailedEvent,
) -> int:
    """The task an event reports on, after checking that its attempt is one the coordinator
    dispatched (or may have, in a pass that crashed before its flush): an attempt already stored
    (current or older: a duplicate, harmless) or one ahead of it within the run's retry budget.
    Anything else is forged or corrupt: MessageError, never adopted."""
    task = wf.index.get(event.task)
    if task is None:
        raise MessageError(
            f"{event.kind} event names task {event.task!r}, which workflow {event.workflow_id!r} "
            "does not have"
        )
    attempt = event.attempt
    if attempt < 1:
        raise MessageError(
            f"{event.kind} event for task {event.task!r} has attempt {attempt}; attempts start at 1"
        )
    current = state.attempt[task]
    if attempt > current:
        if IS_TERMINAL[state.codes[task]]:  # a rerun this state has not seen: premature
            limit = rerun_base(wf, state, task) + wf.tasks[task].num_retries + 1
        else:
            limit = dispatchable_attempts(wf, state, task)
        if attempt > limit:
            raise MessageError(
                f"{event.kind} event for task {event.task!r} reports attempt {attempt}, which was"
                f" never dispatched: the task is {state.state_of(task)} at attempt {current}"
                f" and no attempt above {limit} can have been sent"
            )
    return task


def _accept(step: Step, task: int, attempt: int) -> bool:
    """Whether an event for ``attempt`` of ``task`` applies: the task is not terminal and the
    attempt is the current one of a dispatched task, or ahead of the stored one (dispatched by a
    pass that crashed before it flushed: adopt it)."""
    st = step.st
    code = st.codes[task]
    if IS_TERMINAL[code]:
        return False
    current = st.attempt[task]
    if attempt < current or (attempt == current and code in (PENDING, READY)):
        return False
    if attempt > current:
        step.changed = True
        st.adopt_attempt(task, attempt, step.now_ms)
        # Sent by a lost pass, on whatever had finished then: the state takes it as sent with
        # the upstream it would send now (a report that ran on other inputs is not taken).
        step.dispatch_command(task, attempt)
        budget = step.wf.tasks[task].num_retries + 1
        if attempt - st.base_attempt.get(task, 0) > budget:  # that pass ran one again for free
            st.base_attempt[task] = attempt - budget
    return True


def _ran_on_other_inputs(
    st: RuntimeState, task: int, event: TaskCompletedEvent | TaskFailedEvent
) -> bool:
    """Whether the attempt ran on other inputs than the state recorded for it: two sends of one
    attempt (a pass whose flush was lost, then another) can carry different upstreams (which
    parents had finished, or a parent run again since), and the claim keeps whichever came first.
    Unknown (an older
    worker or state: no digest) is taken as the same, as before digests."""
    theirs, ours = event.upstream_digest, st.upstream_digests.get(task)
    return theirs is not None and ours is not None and theirs != ours


def _other_inputs(step: Step, task: int, event: TaskCompletedEvent | TaskFailedEvent) -> None:
    """Do not take the report as the attempt's: its run is kept in the task's history, and the
    task runs again on the state's inputs as a fresh attempt that does not spend the retry
    budget (the base moves with it) — or, under a cancel, it is cancelled."""
    st = step.st
    attempt = event.attempt
    why = (
        f"attempt {attempt} ran on other inputs than the state recorded for it (another send of"
        " the same attempt carried them): its report is not taken"
    )
    exit_code = event.exit_code if isinstance(event, TaskFailedEvent) else 0
    started = event.started_at
    st.record_result(
        task,
        started_ms=None if started is None else to_ms(started),
        finished_ms=to_ms(event.finished_at),
        exit_code=exit_code,
        log_blob=event.log_blob,
        worker=event.worker,
    )
    step.changed = True
    step.out.append(OtherInputs(task, attempt))
    if st.status is not WorkflowStatus.RUNNING:
        step.terminal(task, CANCELLED, f"cancelled: {why}")
        return
    st.base_attempt[task] = st.base_attempt.get(task, 0) + 1
    st.note_error(task, f"{why}; attempt {attempt + 1} runs on the recorded ones")
    step.dispatch(task)


def _activate(step: Step) -> None:
    st = step.st
    if st.status is not WorkflowStatus.PENDING:
        return
    step.changed = True
    st.status = WorkflowStatus.RUNNING
    work: list[int] = []
    for task, tdef in enumerate(step.wf.tasks):
        if not tdef.parents and st.codes[task] == PENDING:
            step.evaluate(task, work)
    step.propagate(work)


def _started(step: Step, task: int, event: TaskStartedEvent) -> None:
    st = step.st
    if st.codes[task] == RUNNING and st.started_ms[task] is not None:
        return  # a duplicate start of the same attempt
    step.changed = True
    st.record_start(task, to_ms(event.started_at), event.worker)


def _completed(step: Step, task: int, event: TaskCompletedEvent, lists: Mapping[str, Any]) -> None:
    st = step.st
    st.record_result(
        task,
        started_ms=to_ms(event.started_at),
        finished_ms=to_ms(event.finished_at),
        exit_code=0,
        output=event.output,
        log_blob=event.log_blob,
        worker=event.worker,
    )
    st.note_error(task, None)
    ref = event.output
    if ref is None:
        capture(step, task, None)
    elif ref.blob is None:
        capture(step, task, ref.inline)
    else:  # a list-feeding blob output is read by the coordinator (shared.coordinator.lists)
        capture(step, task, lists.get(ref.blob, UNREAD))
    step.terminal(task, COMPLETED)


def _failed(step: Step, task: int, event: TaskFailedEvent) -> None:
    step.st.record_result(
        task,
        started_ms=None if event.started_at is None else to_ms(event.started_at),
        finished_ms=to_ms(event.finished_at),
        exit_code=event.exit_code,
        log_blob=event.log_blob,
        worker=event.worker,
    )
    step.fail(task, event.reason, _describe(event), event.exit_code)


def _describe(event: TaskFailedEvent) -> str:
    head = {
        "exit": f"exit code {event.exit_code}",
        "timeout": "timed out",
        "cancelled": "cancelled",
        "error": "worker error",
        "not_started": "not started in time",
    }[event.reason]
    return f"{head}: {event.error}" if event.error else head


def _cancel(step: Step, reason: str | None) -> None:
    """Stop the workflow: nothing new is dispatched or retried; tasks that have not started are
    cancelled now, running ones when their worker reports (or the sweep's grace runs out)."""
    st = step.st
    if st.status.is_terminal or st.status is WorkflowStatus.CANCELLING:
        return
    step.changed = True
    st.cancel_requested = True
    st.cancel_requested_at = step.now
    st.status = WorkflowStatus.CANCELLING
    st.error = f"cancelled: {reason}" if reason else "cancelled"
    codes = st.codes
    for task in range(len(codes)):
        if codes[task] in (PENDING, READY, QUEUED):
            step.terminal(task, CANCELLED, _CANCEL_BEFORE_RUN)
    st.ready.clear()
