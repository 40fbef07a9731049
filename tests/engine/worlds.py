"""Random workflows and event histories for the engine's property tests (hypothesis strategies)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import strategies as hs

from shared.codec.state import decode_state, encode_state
from shared.definition.workflow import CompiledWorkflow, ExpandFrom, TaskDef
from shared.engine import apply, premature, sweep
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.expansion import expanded
from shared.engine.policy import decide
from shared.engine.state import IS_OK, IS_TERMINAL, READY, RuntimeState
from shared.errors import MessageError
from shared.messages import (
    Event,
    OutputRef,
    RetryEvent,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
)
from shared.names import ResourceNames
from shared.states import TaskState
from tests.codec.equality import assert_same

WF = "wf-prop"


@hs.composite
def dags(draw: hs.DrawFn) -> CompiledWorkflow:
    n = draw(hs.integers(1, 8))
    tasks = []
    for i in range(n):
        parents = tuple(sorted(draw(hs.sets(hs.integers(0, i - 1), max_size=3)))) if i else ()
        policies: list[object] = ["all"]
        if parents:
            policies += ["any", "all_settled", *range(1, len(parents) + 1)]
        condition = None
        if parents and draw(hs.integers(0, 4)) == 0:
            condition = f'state("t{parents[0]}") != "failed"'
        tasks.append(
            TaskDef(
                name=f"t{i}",
                cmd="true",
                queue=draw(hs.sampled_from(["cpu", "gpu"])),
                parents=parents,
                dep_policy=draw(hs.sampled_from(policies)),
                num_retries=draw(hs.integers(0, 2)),
                timeout_s=draw(hs.sampled_from([None, 50.0])),
                queue_timeout_s=draw(hs.sampled_from([None, 500.0])),
                condition=condition,
            )
        )
    # Sometimes one task is a dynamic fan-out over its first parent's output ``{"items": [...]}``.
    candidates = [i for i, t in enumerate(tasks) if t.parents]
    if candidates and draw(hs.integers(0, 3)):
        i = draw(hs.sampled_from(candidates))
        source = tasks[i].parents[0]
        tasks[i] = replace(
            tasks[i],
            cmd="run {{ item }}",
            expand=ExpandFrom(source, ("items",), MAX_WIDTH),
            condition=None,
        )
    return CompiledWorkflow.of(
        "prop",
        tasks,
        max_parallelism=draw(hs.sampled_from([None, 1, 2])),
        result_policy=draw(hs.sampled_from(["all_sinks_succeed", "all_tasks_succeed"])),
    )


@dataclass
class World:
    """The coordinator's surroundings: workers holding dispatched attempts, the events applied since
    the last flush, the last flushed encoding, and the engine's state."""

    wf: CompiledWorkflow
    st: RuntimeState
    now: float = 1000.0
    outstanding: dict[tuple[str, int], bool] = field(default_factory=dict)
    """(task name, attempt) dispatched -> whether a started event was sent for it (by name: an
    expansion lost in a crash may be numbered differently when the replay makes it again)."""
    dead: list[Event] = field(default_factory=list)
    """Events the engine rejected (the coordinator dead-letters them)."""
    history: list[Event] = field(default_factory=list)
    unflushed: list[Event] = field(default_factory=list)
    flushed: bytes = b""
    crashed: bool = False
    finishes: int = 0
    deferred: list[Event] = field(default_factory=list)
    """Premature events (see ``engine.premature``) kept back, as the coordinator keeps them."""

    def check_dispatch(self, command: Dispatch) -> None:
        """A dispatched task's dependency policy is met by its parents' states right now.

        After a crash, replayed events may arrive before the parent completions that made a task
        ready in the lost timeline; the engine adopts such an attempt (it ran: that is proof it was
        dispatched) and may retry it before the replay reaches the parents. So after a crash only
        first dispatches of a run are checked."""
        tdef = self.running.tasks[command.task]
        first = command.attempt == self.st.base_attempt.get(command.task, 0) + 1
        if self.crashed and not first:
            return
        codes = self.st.codes
        ok = sum(1 for p in tdef.parents if IS_OK[codes[p]])
        bad = sum(1 for p in tdef.parents if IS_TERMINAL[codes[p]] and not IS_OK[codes[p]])
        if tdef.parents:
            assert decide(tdef.dep_policy, len(tdef.parents), ok, bad) == READY, command
        assert not self.st.status.is_terminal

    @property
    def running(self) -> CompiledWorkflow:
        return expanded(self.wf, self.st)

    def take(self, commands: list[Command]) -> None:
        for command in commands:
            if isinstance(command, Dispatch):
                self.check_dispatch(command)
                self.outstanding.setdefault((command.name, command.attempt), False)
            else:
                assert isinstance(command, WorkflowFinished)
                assert command.status is self.st.status
                self.finishes += 1

    def apply(self, event: Event, *, record: bool = True) -> None:
        if self.awaits_expansion(event):
            # A task of an expansion the replay has not re-made yet: the coordinator keeps it
            # on the queue and applies it once the expansion is back.
            self.deferred.append(event)
            return
        self._apply(event, record=record)
        while True:
            ready = [e for e in self.deferred if not self.awaits_expansion(e)]
            if not ready:
                return
            self.deferred = [e for e in self.deferred if e not in ready]
            for e in ready:
                self._apply(e, record=record)

    def awaits_expansion(self, event: Event) -> bool:
        unknown = getattr(event, "task", None) not in self.running.index
        return unknown and premature(self.wf, self.st, event)

    def _apply(self, event: Event, *, record: bool) -> None:
        self.now += 7.0
        before_codes = bytes(self.st.codes)
        try:
            commands = apply(self.wf, self.st, event, self.now)
        except MessageError:
            # Only a task of an expansion the replay did not make again (its group ended
            # unexpanded, or expanded another list) can be unknown here: dead-lettered.
            assert isinstance(event, TaskStartedEvent | TaskCompletedEvent | TaskFailedEvent)
            assert self.crashed
            assert event.task not in self.running.index
            self.dead.append(event)
            return
        if not isinstance(event, RetryEvent):
            for i, code in enumerate(before_codes):
                if IS_TERMINAL[code]:
                    assert self.st.codes[i] == code, "a terminal task changed state"
        self.take(commands)
        # Applying the same event again (later) changes nothing and commands nothing.
        snapshot = encode_state(self.st)
        assert apply(self.wf, self.st, event, self.now + 1.0) == []
        assert encode_state(self.st) == snapshot
        if record:
            self.history.append(event)
            self.unflushed.append(event)
        self.check()

    def check(self) -> None:
        st = self.st
        assert sum(st.counts().values()) == len(self.running.tasks) == len(st)
        for group, count in st.expansions:  # expanded once; its children wait for the expansion
            assert st.state_of(group) is TaskState.COMPLETED
            assert count <= MAX_WIDTH
        for task, tdef in enumerate(self.running.tasks):
            if st.codes[task] == READY and tdef.parents:  # ready only once the policy is met
                ok = sum(1 for p in tdef.parents if IS_OK[st.codes[p]])
                bad = sum(
                    1 for p in tdef.parents if IS_TERMINAL[st.codes[p]] and not IS_OK[st.codes[p]]
                )
                assert decide(tdef.dep_policy, len(tdef.parents), ok, bad) == READY
        cap = self.wf.max_parallelism
        if cap is not None and not self.crashed:
            assert st.in_flight <= cap
        if st.status.is_terminal:
            assert st.all_terminal
        data = encode_state(st)
        back = decode_state(data, self.wf)
        assert_same(st, back)
        assert encode_state(back) == data

    def report(self, key: tuple[str, int], outcome: str) -> None:
        name, attempt = key
        task = self.running.index.get(name, 0)
        if outcome == "started":
            if self.outstanding.get(key):
                outcome = "completed"
            else:
                self.outstanding[key] = True
                self.apply(
                    TaskStartedEvent(
                        workflow_id=WF, task=name, attempt=attempt, started_at=self.now, worker="w"
                    )
                )
                return
        del self.outstanding[key]
        if outcome == "completed":
            event: Event = TaskCompletedEvent(
                workflow_id=WF,
                task=name,
                attempt=attempt,
                started_at=self.now,
                finished_at=self.now + 1,
                log_blob=ResourceNames.log_blob(WF, name, attempt),
                worker=f"w{attempt % 3}",
                output=OutputRef(inline=list_output(task, attempt), size=10),
            )
        else:
            event = TaskFailedEvent(
                workflow_id=WF,
                task=name,
                attempt=attempt,
                finished_at=self.now + 1,
                reason=outcome,  # type: ignore[arg-type]
                exit_code=1 if outcome == "exit" else None,
            )
        self.apply(event)

    def sweep(self, advance: float) -> None:
        self.now += advance
        commands = sweep(
            self.wf, self.st, self.now, lost_dispatch_after_s=100.0, cancel_grace_s=300.0
        )
        self.take(commands)
        snapshot = encode_state(self.st)
        again = sweep(self.wf, self.st, self.now, lost_dispatch_after_s=100.0, cancel_grace_s=300.0)
        assert again == []
        assert encode_state(self.st) == snapshot
        self.check()

    def crash_and_replay(self, order: list[int]) -> None:
        """Lose the in-memory state; reload the last flush; the unflushed events come back (in any
        order) and are applied again."""
        self.crashed = True
        self.st = decode_state(self.flushed, self.wf)
        replay = [self.unflushed[i] for i in order]
        # The API sends a retry only after it read a finished state, so a retry is the first event
        # after a flush; a coordinator applies a batch's retry events before its task events.
        replay.sort(key=lambda event: not isinstance(event, RetryEvent))
        self.unflushed = []
        for event in replay:
            self.apply(event)

    def apply_rerun(self) -> None:
        """The API's rerun of a finished workflow (it read the flushed state first)."""
        self.apply(RetryEvent(workflow_id=WF, run=self.st.run))

    def flush(self) -> None:
        self.flushed = encode_state(self.st)
        self.unflushed = []


OUTCOMES = ["started", "completed", "completed", "exit", "timeout", "error", "not_started"]


MAX_WIDTH = 3


def list_output(task: int, attempt: int) -> dict[str, object]:
    """What a source task's attempt outputs: a list that varies by attempt (0-4 items, so some
    are empty and some too long) or, now and then, something that is not a list."""
    n = (3 * task + attempt) % 6
    return {"items": "oops" if n == 5 else [f"v{task}.{attempt}.{k}" for k in range(n)]}
