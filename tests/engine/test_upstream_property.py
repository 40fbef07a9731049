"""Property: the recorded upstream of every completed task is what its accepted report ran on.

Random DAGs under every dependency policy, driven through lost state writes: a pass applies
events and sends its dispatches before its flush, so when its write is lost the events come back
while the task messages it sent stay on the queue. Two sends of one attempt may then carry
different upstreams (simulation seed 2169766); a worker claims the first copy it takes, and its
report echoes that copy's digest. At every step, each completed task ran on outputs the state holds
for those parents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from shared.codec.state import decode_state, encode_state
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine import apply, new_state, premature
from shared.engine.commands import Dispatch
from shared.engine.state import COMPLETED, RuntimeState
from shared.errors import MessageError
from shared.messages import (
    ActivateEvent,
    CancelEvent,
    Event,
    OutputRef,
    TaskCompletedEvent,
    TaskFailedEvent,
)

WF = "wf-ups"
INC = 3


@hs.composite
def fan_ins(draw: hs.DrawFn) -> CompiledWorkflow:
    """Two roots and a fan-in of both under a policy other than ``all``, then a few random tasks
    under any policy."""
    tasks = [TaskDef(name=f"t{i}", cmd="true", queue="cpu") for i in range(2)]
    for i in range(2, 2 + draw(hs.integers(1, 3))):
        fan_in = hs.sets(hs.integers(0, i - 1), min_size=2, max_size=3)
        parents = (0, 1) if i == 2 else tuple(sorted(draw(fan_in)))
        policies: list[object] = ["any", "all_settled", *range(1, len(parents))]
        tasks.append(
            TaskDef(
                name=f"t{i}",
                cmd="true",
                queue="cpu",
                parents=parents,
                dep_policy=draw(hs.sampled_from(policies if i == 2 else ["all", *policies])),
                num_retries=draw(hs.integers(0, 1)),
            )
        )
    return CompiledWorkflow.of("ups", tasks)


@dataclass
class Copy:
    """One task message on the queue."""

    name: str
    attempt: int
    upstream: dict[str, OutputRef] | None
    digest: str | None


@dataclass
class World:
    wf: CompiledWorkflow
    st: RuntimeState = field(init=False)
    flushed: bytes = b""
    now: float = 10.0
    pending: list[Event] = field(default_factory=list)
    """Events on the event queue (reports, and events a lost pass took)."""
    unflushed: list[Event] = field(default_factory=list)
    invisible: list[Event] = field(default_factory=list)
    """The events a lost pass took: back on the queue when their visibility ends."""
    copies: list[Copy] = field(default_factory=list)
    claimed: dict[tuple[str, int], Copy] = field(default_factory=dict)
    dead: list[str] = field(default_factory=list)
    """Why the engine rejected events (dead-lettered)."""
    """(task, attempt) -> the copy a worker claimed and ran (the claim keeps the first)."""

    def __post_init__(self) -> None:
        self.st = new_state(self.wf, WF, 1.0, incarnation=INC)
        self.flushed = encode_state(self.st)
        self.pending.append(ActivateEvent(workflow_id=WF))

    def deliver(self, index: int) -> None:
        event = self.pending.pop(index)
        if premature(self.wf, self.st, event):
            self.pending.append(event)  # left on the queue
            return
        self.now += 1.0
        try:
            commands = apply(self.wf, self.st, event, self.now)
        except MessageError as exc:
            self.dead.append(str(exc))
            return  # dead-lettered
        self.unflushed.append(event)
        for c in commands:
            if isinstance(c, Dispatch):
                digest = getattr(c, "upstream_digest", None)  # (None before digests)
                self.copies.append(Copy(c.name, c.attempt, c.upstream, digest))

    def run(self, index: int, succeed: bool) -> None:
        copy = self.copies.pop(index)
        key = (copy.name, copy.attempt)
        if key in self.claimed:
            return  # a duplicate: dropped by the claim
        self.claimed[key] = copy
        fields = {
            "workflow_id": WF, "task": copy.name, "attempt": copy.attempt, "incarnation": INC,
            "finished_at": self.now,
        }  # fmt: skip
        if copy.digest is not None:  # the worker echoes the message's
            fields["upstream_digest"] = copy.digest
        if succeed:
            value = {"task": copy.name, "attempt": copy.attempt}
            out = OutputRef(inline=value, size=len(str(value)))
            self.pending.append(TaskCompletedEvent(**fields, started_at=self.now, output=out))
        else:
            self.pending.append(TaskFailedEvent(**fields, exit_code=1))

    def flush(self) -> None:
        self.flushed = encode_state(self.st)
        self.unflushed = []

    def lose(self) -> None:
        """The pass's state write is lost: its events come back later; its sends stay sent."""
        self.st = decode_state(self.flushed, self.wf)
        self.invisible += self.unflushed
        self.unflushed = []

    def expire(self) -> None:
        """The visibility of the events a lost pass took ends."""
        self.pending += self.invisible
        self.invisible = []

    def check(self) -> None:
        st = self.st
        for i, tdef in enumerate(self.wf.tasks):
            if st.codes[i] != COMPLETED:
                continue
            ran = self.claimed[(tdef.name, st.attempt[i])]
            for parent, ref in (ran.upstream or {}).items():
                held = st.outputs.get(self.wf.index[parent])
                assert held == ref, f"{tdef.name}/{st.attempt[i]} ran on {parent}: {ref}, {held}"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wf=fan_ins(), data=hs.data())
def test_completed_tasks_ran_on_the_upstream_the_state_holds(
    wf: CompiledWorkflow, data: hs.DataObject
) -> None:
    """Passes (a few events each, then a flush or a lost write: never two lost in a row) and
    workers taking the queue's oldest message, in a random interleaving."""
    world = World(wf)
    lost = False
    for _ in range(data.draw(hs.integers(0, 50), label="steps")):
        action = data.draw(hs.sampled_from(["pass", "pass", "run", "run", "expire"]))
        if action == "pass":
            for _ in range(data.draw(hs.integers(1, 3), label="events")):
                if world.pending:  # mostly in order: a lost pass's events come back last
                    last = len(world.pending) - 1
                    anywhere = data.draw(hs.integers(0, 3), label="out of order") == 0
                    world.deliver(data.draw(hs.integers(0, last), label="event") if anywhere else 0)
                    world.check()
            lost = not lost and data.draw(hs.integers(0, 2), label="lost") == 0
            world.lose() if lost else world.flush()
        elif action == "run" and world.copies:
            world.run(0, data.draw(hs.booleans(), label="succeeds"))
        elif action == "expire":
            world.expire()
        world.check()
    if data.draw(hs.booleans(), label="cancel"):
        world.pending.append(CancelEvent(workflow_id=WF))
    for _ in range(2_000):  # drain: every event and message is taken in the end
        world.expire()
        if world.pending:
            world.deliver(0)
            world.flush()
        elif world.copies:
            world.run(0, True)
        else:
            break
        world.check()
    assert world.st.status.is_terminal, (world.dead, world.st.counts())
