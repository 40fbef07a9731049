"""Event-history helpers for engine tests (Durable Functions style): build a workflow, apply a
history of events to the pure engine, assert on the state and on the commands each step returned."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.definition.workflow import CompiledWorkflow, DepPolicy, RetryPolicy, TaskDef
from shared.engine import apply, new_state, sweep
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.expansion import expanded
from shared.engine.state import RuntimeState
from shared.messages import (
    ActivateEvent,
    CancelEvent,
    Event,
    FailureReason,
    OutputRef,
    RetryEvent,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
)
from shared.states import TaskState, WorkflowStatus

WF_ID = "wf-1"
T0 = 1_700_000_000.0


def task(
    name: str,
    *parents: int,
    policy: DepPolicy = "all",
    queue: str = "cpu",
    retries: int = 0,
    retry: RetryPolicy | None = None,
    condition: str | None = None,
    timeout_s: float | None = None,
    queue_timeout_s: float | None = None,
) -> TaskDef:
    """A TaskDef with parents given as task numbers."""
    return TaskDef(
        name=name,
        cmd=f"echo {name}",
        queue=queue,
        parents=tuple(parents),
        dep_policy=policy,
        num_retries=retries,
        retry=retry or RetryPolicy(),
        condition=condition,
        timeout_s=timeout_s,
        queue_timeout_s=queue_timeout_s,
    )


def workflow(*tasks: TaskDef, **kwargs: object) -> CompiledWorkflow:
    return CompiledWorkflow.of("test", list(tasks), **kwargs)  # type: ignore[arg-type]


def chain(n: int) -> CompiledWorkflow:
    """t0 -> t1 -> ... -> t{n-1}."""
    return workflow(*(task(f"t{i}", *([i - 1] if i else [])) for i in range(n)))


def fan(n: int, **kwargs: object) -> CompiledWorkflow:
    """root -> leaf0..leaf{n-1} -> sink."""
    leaves = [task(f"leaf{i}", 0) for i in range(n)]
    sink = task("sink", *range(1, n + 1))
    return workflow(task("root"), *leaves, sink, **kwargs)


def dispatched(commands: list[Command]) -> list[tuple[str, int]]:
    """(task name, attempt) of every Dispatch, in order."""
    return [(c.name, c.attempt) for c in commands if isinstance(c, Dispatch)]


def finished(commands: list[Command]) -> list[WorkflowStatus]:
    return [c.status for c in commands if isinstance(c, WorkflowFinished)]


@dataclass
class History:
    """A workflow, its state and a clock; each method applies one event and returns the commands."""

    wf: CompiledWorkflow
    now: float = T0
    st: RuntimeState = field(init=False)
    log: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.st = new_state(self.wf, WF_ID, self.now)

    def tick(self, seconds: float = 1.0) -> float:
        self.now += seconds
        return self.now

    def apply(self, event: Event, ticked: bool = False) -> list[Command]:
        """Apply ``event`` one second later (or now, if the caller already advanced the clock)."""
        self.log.append(event)
        return apply(self.wf, self.st, event, self.now if ticked else self.tick())

    def sweep(self, after_s: float = 0.0, lost_after_s: float = 1e9, **kw: float) -> list[Command]:
        return sweep(self.wf, self.st, self.tick(after_s), lost_dispatch_after_s=lost_after_s, **kw)

    @property
    def running(self) -> CompiledWorkflow:
        """The workflow with its dynamic expansions."""
        return expanded(self.wf, self.st)

    def attempt(self, name: str) -> int:
        return self.st.attempt[self.running.index[name]]

    def activate(self) -> list[Command]:
        return self.apply(ActivateEvent(workflow_id=WF_ID))

    def cancel(self, reason: str | None = None) -> list[Command]:
        return self.apply(CancelEvent(workflow_id=WF_ID, reason=reason))

    def retry(self, run: int | None = None) -> list[Command]:
        return self.apply(RetryEvent(workflow_id=WF_ID, run=run or self.st.run))

    def started(self, name: str, attempt: int | None = None, worker: str = "w1") -> list[Command]:
        self.tick()
        return self.apply(
            TaskStartedEvent(
                workflow_id=WF_ID,
                task=name,
                attempt=attempt or self.attempt(name),
                started_at=self.now,
                worker=worker,
            ),
            ticked=True,
        )

    def completed(
        self, name: str, attempt: int | None = None, output: object = None, worker: str = "w1"
    ) -> list[Command]:
        self.tick()
        return self.apply(
            TaskCompletedEvent(
                workflow_id=WF_ID,
                task=name,
                attempt=attempt or self.attempt(name),
                started_at=self.now - 0.5,
                finished_at=self.now,
                output=None if output is None else OutputRef(inline=output, size=1),  # type: ignore[arg-type]
                worker=worker,
            ),
            ticked=True,
        )

    def failed(
        self,
        name: str,
        attempt: int | None = None,
        reason: FailureReason = "exit",
        exit_code: int | None = 1,
        error: str = "boom",
    ) -> list[Command]:
        self.tick()
        return self.apply(
            TaskFailedEvent(
                workflow_id=WF_ID,
                task=name,
                attempt=attempt or self.attempt(name),
                started_at=self.now - 0.5,
                finished_at=self.now,
                reason=reason,
                exit_code=exit_code if reason == "exit" else None,
                error=error,
            ),
            ticked=True,
        )

    @property
    def status(self) -> WorkflowStatus:
        """The workflow status (a fresh read: type checkers do not carry narrowing across it)."""
        return self.st.status

    def state(self, name: str) -> TaskState:
        return self.st.state_of(self.running.index[name])

    def states(self) -> dict[str, TaskState]:
        return {t.name: self.st.state_of(i) for i, t in enumerate(self.running.tasks)}
