"""The primitives every transition is made of, bound to one (workflow, state, now) step.

A ``Step`` collects the commands of one transition and knows how to: move a task to a terminal state
and propagate that to its children (once, iteratively: a 100,000-deep chain of upstream_failed is a
loop, not a recursion), make a task ready, release ready tasks into free max_parallelism slots,
dispatch an attempt, fail an attempt (retry or give up), and finish the workflow.
"""

from __future__ import annotations

from shared.definition.workflow import CompiledWorkflow
from shared.engine.attempt_bounds import records_upstream
from shared.engine.backoff import retry_delay_s
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.expansion import expand, expanded
from shared.engine.policy import condition_verdict, decide
from shared.engine.state import (
    CANCELLED,
    COMPLETED,
    FAILED,
    IS_OK,
    IS_TERMINAL,
    PENDING,
    READY,
    TASK_STATES,
    UPSTREAM_FAILED,
    RuntimeState,
    to_ms,
)
from shared.messages import FailureReason, OutputRef, upstream_digest
from shared.states import WorkflowStatus

_NAMES_IN_SUMMARY = 5

_ALWAYS_RETRYABLE: frozenset[FailureReason] = frozenset({"timeout", "error"})
_NEVER_RETRYABLE: frozenset[FailureReason] = frozenset({"cancelled", "not_started"})


class Step:
    """One transition in progress: the workflow, its state, the time, and the commands so far."""

    __slots__ = ("changed", "now", "now_ms", "out", "st", "wf")

    def __init__(self, wf: CompiledWorkflow, st: RuntimeState, now: float) -> None:
        self.wf = expanded(wf, st)
        """The workflow as it runs (definition + expansions); an expansion replaces it."""
        self.st = st
        self.now = now
        self.now_ms = to_ms(now)
        self.out: list[Command] = []
        self.changed = False
        """Whether the state changed (``updated_at`` moves only then, so a no-op is a no-op)."""

    def done(self) -> list[Command]:
        """Finish the step: stamp ``updated_at`` if anything changed; return the commands."""
        if self.changed:
            self.st.updated_at = self.now
        return self.out

    # -- task transitions ------------------------------------------------------------------------

    def terminal(self, task: int, code: int, error: str | None = None) -> None:
        """Move ``task`` (not yet terminal) to terminal ``code`` and propagate to its children.

        Each child's counters are updated once per terminal parent; a pending child whose policy
        is now decided becomes ready, skipped or upstream_failed, and the latter two propagate in
        turn (a work list, not recursion). While the workflow is cancelling, children are not
        decided: the cancel itself settles them.
        """
        self.changed = True
        self.st.settle(task, code, error, self.now_ms)
        self.propagate([task])

    def propagate(self, work: list[int]) -> None:
        """Update the children of the tasks in ``work`` (each just became terminal), and of the
        tasks that become terminal in consequence. Consumes ``work``."""
        st = self.st
        evaluate = st.status is WorkflowStatus.RUNNING
        codes = st.codes
        while work:
            parent = work.pop()
            kids = self.wf.children[parent]  # re-read: an expansion replaces the workflow
            if not kids:
                continue
            counter = st.n_ok if IS_OK[codes[parent]] else st.n_bad
            for child in kids:
                counter[child] += 1
                if evaluate and codes[child] == PENDING:
                    self.evaluate(child, work, cause=parent)

    def evaluate(self, task: int, work: list[int], cause: int | None = None) -> None:
        """Decide a PENDING task from its counters: ready (after its condition), skipped or
        upstream_failed (appended to ``work`` for propagation), or leave it waiting."""
        st, wf = self.st, self.wf
        tdef = wf.tasks[task]
        n_parents = len(tdef.parents)
        if n_parents:
            verdict = decide(tdef.dep_policy, n_parents, st.n_ok[task], st.n_bad[task])
        else:
            verdict = READY
        if verdict is None:
            return
        if verdict == UPSTREAM_FAILED:
            self._settle_unrun(task, UPSTREAM_FAILED, self._upstream_failure(task, cause), work)
            return
        if tdef.condition is not None:
            outcome = condition_verdict(wf, st, task)
            if outcome is not None:
                self._settle_unrun(task, outcome[0], outcome[1], work)
                return
        if tdef.expand is not None:
            expand(self, task, work)
            return
        self.changed = True
        st.move(task, READY)
        st.ready.append(task)

    def _upstream_failure(self, task: int, cause: int | None) -> str:
        """Why ``task`` cannot run: every parent that failed (the first few by name), the one
        whose end decided it first. O(parents), once per task."""
        st, tasks = self.st, self.wf.tasks
        codes = st.codes
        bad = [p for p in tasks[task].parents if IS_TERMINAL[codes[p]] and not IS_OK[codes[p]]]
        if cause in bad:
            bad.remove(cause)
            bad.insert(0, cause)
        if not bad:
            return "upstream failed: dependency policy can no longer be met"
        shown, rest = bad[:_NAMES_IN_SUMMARY], len(bad) - _NAMES_IN_SUMMARY
        named = ", ".join(f"{tasks[p].name} is {TASK_STATES[codes[p]]}" for p in shown)
        more = f", and {rest} more failed parents" if rest > 0 else ""
        return f"upstream failed: {named}{more}"

    def _settle_unrun(self, task: int, code: int, why: str, work: list[int]) -> None:
        self.changed = True
        self.st.settle(task, code, why, self.now_ms)
        work.append(task)

    def release(self) -> None:
        """Dispatch ready tasks, oldest first, while max_parallelism leaves a slot (only while the
        workflow runs). O(1) per released task."""
        st = self.st
        if st.status is not WorkflowStatus.RUNNING:
            return
        cap = self.wf.max_parallelism
        ready, codes = st.ready, st.codes
        while ready and (cap is None or st.in_flight < cap):
            task = ready.popleft()
            if codes[task] == READY:  # entries of tasks that moved on are dropped lazily
                self.dispatch(task)

    def dispatch(self, task: int, delay_s: float = 0.0) -> None:
        """Send the next attempt of ``task`` (after ``delay_s``); the task is QUEUED meanwhile."""
        st = self.st
        self.changed = True
        attempt = st.attempt[task] + 1
        st.begin_attempt(task, attempt, self.now_ms + to_ms(delay_s))
        self.out.append(self.dispatch_command(task, attempt, delay_s))

    def dispatch_command(self, task: int, attempt: int, delay_s: float = 0.0) -> Dispatch:
        """The Dispatch of ``attempt`` of ``task``, with its parents' outputs (O(parents)). The
        state records the upstream's digest for the attempt (``RuntimeState.upstream_digests``,
        ``records_upstream``): another pass's send of the same attempt may have carried others."""
        st, tdef = self.st, self.wf.tasks[task]
        upstream: dict[str, OutputRef] | None = None
        outputs = st.outputs
        if outputs:
            tasks = self.wf.tasks
            found = {tasks[p].name: outputs[p] for p in tdef.parents if p in outputs}
            upstream = found or None
        digest = self.note_upstream(task, upstream)
        return Dispatch(
            task,
            tdef.name,
            attempt,
            tdef.queue,
            delay_s,
            upstream,
            st.incarnation,
            st.run,
            st.incarnation_blobs,
            digest,
        )

    def note_upstream(self, task: int, upstream: dict[str, OutputRef] | None) -> str | None:
        """Record (and return) the digest of ``upstream`` as what ``task``'s current attempt runs
        on (None: nothing to record, a root, or a state from before blobs per incarnation)."""
        if not records_upstream(self.wf, self.st, task):
            return None
        digest = self.st.upstream_digests[task] = upstream_digest(upstream)
        return digest

    def fail(
        self,
        task: int,
        reason: FailureReason,
        text: str,
        exit_code: int | None = None,
    ) -> None:
        """The current attempt of ``task`` failed: retry it after its backoff if it is retryable,
        has budget left and the workflow is not cancelling; otherwise it is failed (or cancelled,
        if that is why it stopped)."""
        st, wf = self.st, self.wf
        tdef = wf.tasks[task]
        attempt = st.attempt[task]
        used = attempt - st.base_attempt.get(task, 0)
        if reason in _ALWAYS_RETRYABLE:
            retryable = True
        elif reason in _NEVER_RETRYABLE:
            retryable = False
        else:
            codes = tdef.retry.retry_on_exit_codes
            retryable = codes is None or exit_code in codes
        if retryable and used < tdef.num_retries + 1 and st.status is WorkflowStatus.RUNNING:
            delay = retry_delay_s(
                tdef.retry, used, workflow_id=st.workflow_id, task=tdef.name, attempt=attempt + 1
            )
            st.note_error(task, f"attempt {attempt} failed: {text}")
            self.dispatch(task, delay)
            return
        self.terminal(task, CANCELLED if reason == "cancelled" else FAILED, text)

    # -- workflow --------------------------------------------------------------------------------

    def maybe_finish(self) -> None:
        """If every task is terminal, end the run (once): CANCELLED after a cancel, else what the
        result policy says. O(1) unless it finishes (then O(tasks), once per run)."""
        st = self.st
        if not st.all_terminal or st.status not in (
            WorkflowStatus.RUNNING,
            WorkflowStatus.CANCELLING,
        ):
            return
        if st.cancel_requested or st.status is WorkflowStatus.CANCELLING:
            status = WorkflowStatus.CANCELLED
            st.error = st.error or "cancelled"
        elif self._succeeded():
            status = WorkflowStatus.COMPLETED
            st.error = None
        else:
            status = WorkflowStatus.FAILED
            st.error = self._failure_summary()
        self.changed = True
        st.status = status
        st.finished_at = self.now
        st.ready.clear()
        self.out.append(WorkflowFinished(status))

    def _succeeded(self) -> bool:
        tally, codes = self.st.tally, self.st.codes
        if self.wf.result_policy == "all_tasks_succeed":
            return not (tally[FAILED] or tally[UPSTREAM_FAILED] or tally[CANCELLED])
        if not tally[COMPLETED]:
            return False
        return all(IS_OK[codes[s]] for s in self.wf.sinks)

    def _failure_summary(self) -> str:
        st = self.st
        for code, verb in (
            (FAILED, "failed"),
            (CANCELLED, "cancelled"),
            (UPSTREAM_FAILED, "upstream_failed"),
        ):
            n = st.tally[code]
            if not n:
                continue
            names = self._names_in(code, _NAMES_IN_SUMMARY)
            more = "…" if n > len(names) else ""
            noun = "task" if n == 1 else "tasks"
            return f"{n} {noun} {verb}: {', '.join(names)}{more}"
        if not st.tally[COMPLETED]:
            return "no task completed (every task was skipped)"
        return "a sink task did not succeed"

    def _names_in(self, code: int, limit: int) -> list[str]:
        codes, tasks = self.st.codes, self.wf.tasks
        names: list[str] = []
        at = codes.find(code)
        while at >= 0 and len(names) < limit:
            names.append(tasks[at].name)
            at = codes.find(code, at + 1)
        return names


def in_state(st: RuntimeState, code: int) -> list[int]:
    """The tasks in state ``code``, in task order (a C-speed scan of the state column)."""
    codes = st.codes
    found: list[int] = []
    at = codes.find(code)
    while at >= 0:
        found.append(at)
        at = codes.find(code, at + 1)
    return found
