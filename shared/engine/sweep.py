"""The sweep tick: what the timer finds wrong with a workflow, derived from its state alone.

Level-triggered: each check looks at the state as it is, so running the sweep twice at the same time
changes nothing the second time. Cost: O(queued + running + ready) tasks, found with C-speed scans
of the state column.
"""

from __future__ import annotations

from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Command
from shared.engine.state import CANCELLED, QUEUED, RUNNING, RuntimeState
from shared.engine.step import Step, in_state
from shared.states import WorkflowStatus

TIMEOUT_GRACE_S = 60.0
"""How long past its timeout_s a running attempt may stay silent before the sweep fails it (the
worker enforces timeout_s itself and normally reports the timeout first)."""


EMPTY_QUEUE_GRACE_S = 60.0
"""Default of how long after its last send a queued attempt on an empty queue is presumed lost:
long enough for a worker that took and finished it to have its completion applied."""


def presumed_lost(
    now_ms: int,
    visible_ms: int,
    sent_ms: int,
    queue_empty: bool,
    *,
    lost_after_s: float,
    empty_grace_s: float = EMPTY_QUEUE_GRACE_S,
) -> bool:
    """Whether a queued attempt's task message is presumed lost (so it is sent again).

    - Its queue holds no message at all (visible or not), the attempt is due (not a delayed retry)
      and it was last sent more than ``empty_grace_s`` ago: the message is not on its queue, and
      a worker that took it would have reported by now. This is the signal ``dagq doctor`` shows.
    - Or it was last sent more than ``lost_after_s`` ago, whatever the queue holds (the backstop
      for a message lost on a queue that is busy with others).
    Sending again is harmless: workers run an attempt once (its claim blob).
    """
    since_sent_ms = now_ms - sent_ms
    if queue_empty and now_ms >= visible_ms and since_sent_ms > empty_grace_s * 1000:
        return True
    return since_sent_ms > lost_after_s * 1000


def sweep(
    wf: CompiledWorkflow,
    state: RuntimeState,
    now: float,
    *,
    lost_dispatch_after_s: float,
    cancel_grace_s: float = 600.0,
    empty_queues: frozenset[str] = frozenset(),
    empty_queue_grace_s: float = EMPTY_QUEUE_GRACE_S,
) -> list[Command]:
    """One sweep tick over one workflow (in place); returns the commands it causes.

    - running past ``timeout_s`` + ``TIMEOUT_GRACE_S``: the attempt fails as a timeout (retried if
      it has budget);
    - queued longer than ``queue_timeout_s`` without a start: fails as not started (no retry);
    - queued and ``presumed_lost`` (its queue is in ``empty_queues``, the definition queue names
      seen holding no message, and it was sent ``empty_queue_grace_s`` ago; or it was sent
      ``lost_dispatch_after_s`` ago): the same attempt is sent again (workers deduplicate by
      attempt);
    - ready tasks and free max_parallelism slots: dispatched (repairs a missed release);
    - cancelling, with tasks still running ``cancel_grace_s`` after the cancel: they are cancelled.
    A pending (never activated) or finished workflow is left alone.
    """
    if state.status not in (WorkflowStatus.RUNNING, WorkflowStatus.CANCELLING):
        return []
    step = Step(wf, state, now)
    wf = step.wf  # the definition plus its expansions
    now_ms = step.now_ms
    if state.status is WorkflowStatus.CANCELLING:
        since = state.cancel_requested_at
        if since is None or now - since > cancel_grace_s:
            for task in in_state(state, RUNNING):
                step.terminal(
                    task,
                    CANCELLED,
                    f"cancelled: still running {cancel_grace_s:g}s after the cancel; given up",
                )
    else:
        for task in in_state(state, RUNNING):
            limit = wf.tasks[task].timeout_s
            started = state.started_ms[task]
            if limit is None or started is None:
                continue
            if now_ms - started > (limit + TIMEOUT_GRACE_S) * 1000:
                state.finished_ms[task] = now_ms
                step.fail(task, "timeout", f"timed out: no result {limit:g}s after it started")
        for task in in_state(state, QUEUED):
            visible = state.queued_ms[task]
            if visible is None:
                continue
            queue_timeout = wf.tasks[task].queue_timeout_s
            if queue_timeout is not None and now_ms - visible > queue_timeout * 1000:
                state.finished_ms[task] = now_ms
                step.fail(
                    task,
                    "not_started",
                    f"not started: no worker took it within queue_timeout_s={queue_timeout:g}",
                )
            elif presumed_lost(
                now_ms,
                visible,
                state.sent_ms.get(task, visible),
                wf.tasks[task].queue in empty_queues,
                lost_after_s=lost_dispatch_after_s,
                empty_grace_s=empty_queue_grace_s,
            ):
                state.sent_ms[task] = now_ms
                step.changed = True
                step.out.append(step.dispatch_command(task, state.attempt[task]))
    step.release()
    step.maybe_finish()
    return step.done()
