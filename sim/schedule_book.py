"""The schedules' invariants (``sim.schedules`` puts schedules in the mix; the invariants are
listed there and in docs/simulation.md): hooks on the simulated storage that judge what the
users and the sweeps did to each schedule and its runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.api import schedules as api_schedules
from shared.definition.schedule import run_id
from shared.definition.workflow import CompiledWorkflow
from shared.deployment import partition_of
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from shared.storage.schedules import ScheduleRecord, ScheduleSpec
from sim.invariants import Oracle
from sim.storage import Actor, Platform, chain_hook


@dataclass
class Life:
    """What the users and the sweeps did to one schedule."""

    spec: ScheduleSpec
    slots: list[float]
    wf: CompiledWorkflow
    encoded: bytes
    created: bool = False
    not_before: float = float("inf")
    """As created (a resume's is in ``closed``)."""
    paused_at: float | None = None
    deleted_at: float | None = None
    closed: list[tuple[float, float]] = field(default_factory=list)
    """Slot windows ``(after, up to]`` of pauses that ended: no run of a slot in one."""

    def forbidden(self, slot: float, skew: float) -> str | None:
        """Why the run of ``slot`` may not be started by a sweep, or None."""
        if slot <= self.not_before:
            return f"at or before the schedule's creation (not_before {self.not_before:.3f})"
        if self.deleted_at is not None and slot > self.deleted_at + skew:
            return f"more than {skew} s after the schedule was deleted at {self.deleted_at:.3f}"
        if self.paused_at is not None and slot > self.paused_at + skew:
            return f"more than {skew} s after the schedule was paused at {self.paused_at:.3f}"
        for after, until in self.closed:
            if after < slot <= until:
                return f"in a pause (slots in ({after:.3f}, {until:.3f}] are skipped)"
        return None


@dataclass
class RunSeen:
    """One slot's run, as storage saw it."""

    schedule: str
    slot: float
    by_sweeps: int = 0
    """Creations of its state by the sweeps."""
    by_user: bool = False
    """A user created it (a submit of the id after a purge)."""
    reactivated: bool = False
    """A user made it active again after it ended (a retry)."""
    active: bool = False
    ended_at: float = float("-inf")


class ScheduleBook:
    """The schedules' invariants: hooks on the simulated storage (``sim.storage.Platform``)."""

    def __init__(self, platform: Platform, raw: MemoryStorage, oracle: Oracle, *,
                 partitions: int, max_skew_s: float, submitted: list[str],
                 definitions: dict[str, tuple[CompiledWorkflow, bytes]]) -> None:  # fmt: skip
        self.platform, self.raw, self.oracle = platform, raw, oracle
        self.partitions, self.skew = partitions, max_skew_s
        self.submitted, self.definitions = submitted, definitions
        self.lives: dict[str, Life] = {}
        self.runs: dict[str, RunSeen] = {}
        self._existed: dict[str, bool] = {}
        chain_hook(platform.effect, "workflows.create_state", self._about_to_create)
        chain_hook(platform.after, "workflows.create_state", self._created)
        chain_hook(platform.after, "workflows.write_state", self._wrote)
        chain_hook(platform.after, "schedules.create", self._schedule_created)
        chain_hook(platform.after, "schedules.update", self._schedule_updated)
        chain_hook(platform.after, "schedules.delete", self._schedule_deleted)

    def register(self, spec: ScheduleSpec, slots: list[float]) -> None:
        """A schedule a user is about to create (its runs' workflow, for the oracle)."""
        wf, encoded = api_schedules.compile_spec(spec)
        self.lives[spec.name] = Life(spec, slots, wf, encoded)

    def _life_of(self, workflow_id: str) -> tuple[Life, float] | None:
        name, _, _stamp = workflow_id.rpartition("-")
        life = self.lives.get(name)
        if life is None:
            return None
        for slot in life.slots:
            if run_id(name, slot) == workflow_id:
                return life, slot
        return None

    # -- runs ----------------------------------------------------------------------------------

    def _about_to_create(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        """A sweep's run is told to the oracle as its state is about to be created (and a run
        a schedule's delete finishes, ``finish_and_delete``)."""
        workflow_id = a[0]
        blobs = self.raw.workflows.container.blobs
        self._existed[workflow_id] = ResourceNames.state_blob(workflow_id) in blobs
        found = self._life_of(workflow_id)
        if found is None or (actor.partition is None and workflow_id in self.oracle.workflows):
            return  # a user's submit of the id told the oracle itself
        life = found[0]
        self.oracle.submitting(workflow_id, life.wf, partition_of(workflow_id, self.partitions))
        if workflow_id not in self.definitions:
            self.submitted.append(workflow_id)
            self.definitions[workflow_id] = (life.wf, life.encoded)
            if life.spec.concurrency == "replace":  # the sweep cancels it when the next starts
                self.oracle.workflows[workflow_id].cancels += 1

    def _created(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        workflow_id = a[0]
        found = self._life_of(workflow_id)
        if found is None or self._existed.pop(workflow_id, True):
            return
        life, slot = found
        run = self.runs.setdefault(workflow_id, RunSeen(life.spec.name, slot))
        if actor.partition is None:
            run.by_user, run.active = True, True
            return
        run.by_sweeps += 1
        if run.by_sweeps > 1:
            self._fail(actor, f"{workflow_id}: a sweep created the run of this slot again")
        why = life.forbidden(slot, self.skew)
        if why is not None:
            self._fail(actor, f"{workflow_id}: a sweep started a slot {why}")
        if life.spec.concurrency == "forbid":
            for other in self._active_runs(life.spec.name, workflow_id):
                self._fail(actor, f"{workflow_id}: started under forbid while {other} is active")
        run.by_user, run.active = False, True

    def _active_runs(self, name: str, besides: str) -> list[str]:
        """The runs of schedule ``name`` but ``besides`` that the sweeps started and that are
        active (a run a user submitted or made active again aside)."""
        return [
            workflow_id for workflow_id, seen in sorted(self.runs.items())
            if workflow_id != besides and seen.schedule == name and seen.active
            and seen.by_sweeps and not seen.by_user and not seen.reactivated
        ]  # fmt: skip

    def _wrote(self, _actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        run = self.runs.get(a[0])
        state = None if run is None else self.oracle._state(a[0])
        if run is None or state is None:
            return
        if state.status.is_terminal and run.active:
            run.active, run.ended_at = False, self.platform.clock()
        elif not state.status.is_terminal and not run.active:
            run.active, run.reactivated = True, True

    # -- schedules -----------------------------------------------------------------------------

    def _schedule_created(self, _actor: Actor, _label: str, a: tuple[Any, ...], r: Any) -> None:
        record: ScheduleRecord = a[0]
        life = self.lives.get(record.name)
        if life is None or not r:
            return
        if not life.created or life.deleted_at is not None:
            # a first creation, or the name created again after a delete (a user's create whose
            # reply was lost, tried again: seed 2574 of `make sim SEEDS=10000`): a new life, whose
            # slots start after its own creation
            life.created, life.not_before = True, record.not_before
            life.deleted_at, life.paused_at, life.closed = None, None, []

    def _schedule_updated(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        record: ScheduleRecord = a[0]
        life = self.lives.get(record.name)
        if life is None or record.paused == (life.paused_at is not None):
            return
        if actor.partition is not None:  # not a user's pause or resume: the book keeps its own
            self._fail(actor, f"schedule {record.name}: a sweep set paused={record.paused}")
            return
        now = self.platform.clock()
        if record.paused:
            life.paused_at = now
        elif life.paused_at is not None:
            life.closed.append((life.paused_at + self.skew, record.not_before))
            life.paused_at = None

    def _schedule_deleted(self, _actor: Actor, _label: str, a: tuple[Any, ...], r: Any) -> None:
        life = self.lives.get(a[0])
        if life is not None and r and life.deleted_at is None:
            life.deleted_at = self.platform.clock()

    # -- the end -------------------------------------------------------------------------------

    def missing(self) -> list[str]:
        """The due slots of live schedules that have no run (and were not rightly skipped)."""
        missing = []
        for name, life in sorted(self.lives.items()):
            record = self.raw.schedules.records.get(name)
            if record is None or record.paused:
                continue
            owed = [s for s in life.slots if s > record.not_before][-life.spec.catch_up :]
            for slot in owed:
                workflow_id = run_id(name, slot)
                run = self.runs.get(workflow_id)
                if run is not None and (run.by_sweeps or run.by_user):
                    continue
                if life.spec.concurrency == "forbid" and self._busy(name, slot):
                    continue
                missing.append(workflow_id)
        return missing

    def _busy(self, name: str, slot: float) -> bool:
        """Whether an earlier run of ``name`` may have been active when a sweep found ``slot``
        due (a forbid schedule then skips it)."""
        return any(
            run.schedule == name and run.slot < slot
            and (run.active or run.ended_at >= slot - self.skew)
            for run in self.runs.values()
        )  # fmt: skip

    def final(self) -> None:
        for workflow_id in self.missing():
            self.oracle.fail("end", f"{workflow_id}: a due slot of a live schedule never ran")

    def _fail(self, actor: Actor, what: str) -> None:
        self.oracle.fail(actor.name, what)
