"""The oracle: the design's invariants, checked the instant storage changes and at the end.

Continuous (hooks on the simulated storage, see ``sim.storage.Platform``):

- one writer per partition: a state write is issued only by a coordinator of the workflow's
  partition that holds that partition's lease at that moment;
- no lost update: each stored state follows from the previous one (run numbers and attempt
  numbers never go back; within a run a terminal task stays as it ended and a terminal workflow
  stays terminal) — a blind overwrite shows up as a step back;
- attempts never exceed their budget (``num_retries + 1`` per run, counted from the run's base);
- purge never removes a non-terminal workflow (checked as the delete takes effect);
- an attempt never runs twice at once, and never again after it reported (unless the worker
  running it died or was evicted first: the delivery rule), and no task starts once its workflow
  is terminal.

At the end (after the faults stopped and the system had time to converge): every workflow is
terminal; its index row says what its state says; outputs downstream are what upstream reported;
no event, poison message or task message is left on a queue; no event was dead-lettered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from shared import codec
from shared.definition.workflow import CompiledWorkflow
from shared.deployment import partition_from_metadata
from shared.engine.state import IS_TERMINAL, RuntimeState
from shared.errors import NotFoundError
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from shared.storage.repeat import is_repeat
from sim.index_versions import IndexVersions
from sim.storage import Actor, Platform

BENIGN_DEAD_LETTERS = (
    "of another incarnation of workflow",
    "which has no state blob 30 s after the message was sent",
    "is not signed by the app",
    "no key in DAGQ_VERIFY_KEYS made",
)
"""Dead-letter reasons that are the design working, not a fault: a purged workflow's late task
message or event, which reached its id's next incarnation, is kept aside with its reason (never
applied or run); so is a task message whose state blob did not come (its submit sent the roots,
then failed before creating the state: ``worker_agent.workflow_check.orphaned``). A report held
for a rerun that never arrived is not among them: only a cancel settles a task while a dispatch
the state does not show may be out, and a report of such a dispatch is stale
(``engine.attempt_bounds.rerun_base``). The forger's messages, unsigned or signed with a key not
in force, are dead-lettered by design too (``sim.actors.forger``)."""


@dataclass
class Known:
    """A workflow the simulated users submitted (one id; a purge and re-submit starts a new
    incarnation)."""

    wf: CompiledWorkflow
    partition: int
    incarnation: int = 1
    purge_started: bool = False
    """A purge of the id started (and was not refused) since this incarnation began: its state
    blob may go."""
    cancels: int = 0
    """Cancels users asked for (of any incarnation of the id): a workflow no user cancelled must
    never end cancelled (the forger's cancel events are never applied)."""
    purges: int = 0
    """Purges of the id in flight: one that started before a re-submit may purge the new
    incarnation (seed 198: a purge stalled across a concurrent purge-and-re-submit, then purged
    the re-submitted workflow once it completed)."""
    purged: int = 0
    """Purges of the id that answered (not refused): a refused purge that overlapped one of
    them leaves ``purge_started`` set (seed 2050: a refusal that stalled past another user's
    purge of the workflow forgot that purge)."""
    last: RuntimeState | None = None
    """The state as last stored (the base of the lost-update check)."""


@dataclass
class Runs:
    """What workers did with one attempt (``{incarnation}:{workflow}/{task}/{attempt}``)."""

    message: str | None = None
    """The task message its first run came from (the only one that may ever run it)."""
    live: int = 0
    reported: bool = False
    deleted: bool = False
    """A run reported and then deleted its message: nothing may run the attempt again."""
    upstream: dict[str, JsonValue] | None = None


@dataclass
class Oracle:
    platform: Platform
    raw: MemoryStorage
    partitions: int
    lease_s: float
    workflows: dict[str, Known] = field(default_factory=dict)
    runs: dict[str, Runs] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    _decoded: dict[str, tuple[str, RuntimeState]] = field(default_factory=dict)
    _replacing: dict[str, str | None] = field(default_factory=dict)
    """Workflow -> the ETag its state had as a write took effect (checked against If-Match)."""
    broken_at: dict[int, float] = field(default_factory=dict)
    """Partition -> when chaos last broke its lease."""

    def __post_init__(self) -> None:
        p = self.platform
        p.before["workflows.write_state"] = self._issued_write
        p.effect["workflows.write_state"] = self._writing
        p.after["workflows.write_state"] = self._wrote
        p.after["workflows.create_state"] = self._created
        p.effect["workflows.delete"] = self._deleting
        p.effect["outputs.delete_prefix"] = self._deleting_outputs
        IndexVersions(p, self.raw, self.fail)

    def fail(self, actor: str, what: str) -> None:
        self.platform.log(actor, f"VIOLATION {what}")
        self.violations.append(f"t={self.platform.clock():.3f} {actor}: {what}")

    # -- submissions ---------------------------------------------------------------------------

    def submitting(self, workflow_id: str, wf: CompiledWorkflow, partition: int) -> None:
        known = self.workflows.get(workflow_id)
        if known is None:
            self.workflows[workflow_id] = Known(wf, partition)
        elif known.purge_started and self._state(workflow_id) is None:
            known.incarnation += 1
            known.purge_started = known.purges > 0
            known.last = None

    def cancelling(self, workflow_id: str) -> None:
        """A user asks to cancel ``workflow_id``."""
        self.workflows[workflow_id].cancels += 1

    def _state(self, workflow_id: str) -> RuntimeState | None:
        blob = self.raw.workflows.container.blobs.get(ResourceNames.state_blob(workflow_id))
        known = self.workflows.get(workflow_id)
        if blob is None or known is None:
            return None
        cached = self._decoded.get(workflow_id)
        if cached is None or cached[0] != blob.etag:
            cached = self._decoded[workflow_id] = (
                blob.etag,
                codec.decode_state(blob.data, known.wf),
            )
        return cached[1]

    # -- storage hooks -------------------------------------------------------------------------

    def _issued_write(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        if is_repeat():
            # The same write sent again by the adapter after a lost connection, at most ~1.4 s
            # later, with the same If-Match: judged when it was first issued (like a stall).
            return
        workflow_id = a[0]
        known = self.workflows.get(workflow_id)
        if known is None:
            return
        partition = partition_from_metadata(a[3])
        if actor.partition is None:
            self.fail(
                actor.name, f"{workflow_id}: state written by a process that is no coordinator"
            )
            return
        if partition != known.partition or actor.partition != known.partition:
            self.fail(
                actor.name,
                f"{workflow_id}: state of a partition-{known.partition} workflow written by"
                f" partition {actor.partition} (metadata says {partition})",
            )
        if not self._may_write(actor, known.partition):
            self.fail(actor.name, f"{workflow_id}: state write issued without the lease")

    def _may_write(self, actor: Actor, partition: int) -> bool:
        """Whether ``actor``'s lease lets it write now: its lease is the current one and has not
        expired, or it was broken recently enough that the holder cannot have noticed yet (a
        break is noticed at the next renewal; a state write carries no lease id)."""
        lease = self.raw.leases.get(partition)
        mine = actor.leases.get(partition)
        if lease is None or mine is None:
            return False
        now = self.platform.clock()
        if lease.lease_id == mine and (lease.expires_at is None or now < lease.expires_at):
            return True
        broken = self.broken_at.get(partition)
        return broken is not None and now - broken <= self.lease_s

    def _created(self, _actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        known = self.workflows.get(a[0])
        if known is not None and not (is_repeat() and known.last is not None):
            known.last = codec.decode_state(a[1], known.wf)

    def _writing(self, _actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        blob = self.raw.workflows.container.blobs.get(ResourceNames.state_blob(a[0]))
        self._replacing[a[0]] = blob.etag if blob is not None else None

    def _wrote(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        workflow_id, data = a[0], a[1]
        blob = self.raw.workflows.container.blobs.get(ResourceNames.state_blob(workflow_id))
        if blob is not None and blob.etag == self._replacing.get(workflow_id):
            # Nothing was written: a repeat found its earlier try's write (shared.storage.repeat)
            self._replacing.pop(workflow_id, None)
            return
        if self._replacing.pop(workflow_id, None) != a[2]:
            self.fail(actor.name, f"{workflow_id}: a state write replaced a version it never read"
                                  f" (If-Match {a[2]}): a lost update")  # fmt: skip
        known = self.workflows.get(workflow_id)
        if known is None:
            return
        new = codec.decode_state(data, known.wf)
        for problem in _steps_back(known.last, new) + _over_budget(known.wf, new):
            self.fail(actor.name, f"{workflow_id}: {problem}")
        known.last = new

    def _deleting(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        workflow_id, etag = a[0], a[1] if len(a) > 1 else None
        blob = self.raw.workflows.container.blobs.get(ResourceNames.state_blob(workflow_id))
        if blob is not None and etag is not None and blob.etag != etag:
            return  # If-Match fails: the delete is refused (StaleStateError), nothing goes
        state = self._state(workflow_id)
        if state is not None and not state.status.is_terminal:
            self.fail(actor.name, f"{workflow_id}: purge deleted a {state.status} workflow")

    def _deleting_outputs(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        """A purge never deletes a blob of another incarnation: the blobs one purge deletes are
        of one incarnation of the id, never of the one whose state the id holds as the delete
        takes effect (a purge deletes its own workflow's state blob before its blobs)."""
        prefix, segments = str(a[0]), (a[1] if len(a) > 1 else None)
        workflow_id = prefix.split("/", 1)[0]
        doomed = {
            name: ResourceNames.incarnation_of_blob(name)
            for name in self.raw.outputs.container.blobs
            if name.startswith(prefix) and (segments is None or name.count("/") + 1 == segments)
        }
        incarnations = {inc for inc in doomed.values() if inc is not None}
        state = self._state(workflow_id)
        live = None if state is None else state.blob_incarnation
        if live in incarnations:
            example = next(name for name, inc in doomed.items() if inc == live)
            self.fail(
                actor.name,
                f"{workflow_id}: a purge deleted blobs of incarnation {live}, which the id holds"
                f" now ({example})",
            )
        elif len(incarnations) > 1:
            self.fail(
                actor.name,
                f"{workflow_id}: one purge deleted blobs of {len(incarnations)} incarnations"
                f" ({sorted(incarnations)})",
            )

    # -- workers -------------------------------------------------------------------------------

    def started(
        self, actor: str, workflow_id: str, key: str, message_id: str, incarnation: int | None
    ) -> str:
        """Record a run starting; return its key (of the incarnation its message is of: the
        workflow's own, which every message carries since they have one)."""
        run_key = f"{incarnation}:{key}"
        runs = self.runs.setdefault(run_key, Runs(message=message_id))
        if runs.message != message_id:
            self.fail(actor, f"attempt {key} ran from a second task message (a duplicate dispatch"
                             " that its claim should have dropped)")  # fmt: skip
        if runs.deleted:
            self.fail(actor, f"attempt {key} ran again after a run of it reported and deleted it")
        runs.live += 1
        state = self._state(workflow_id)
        known = self.workflows.get(workflow_id)
        if state is not None and known is not None and state.status.is_terminal:
            task = known.wf.index[key.split("/")[1]]
            # An attempt beyond the state's is a rerun sent just before its flush: it may start.
            if int(key.split("/")[2]) <= state.attempt[task]:
                self.fail(actor, f"attempt {key} started after its workflow was {state.status}")
        return run_key

    def ended(self, run_key: str, *, reported: bool, upstream: Any = None) -> None:
        runs = self.runs[run_key]
        runs.live -= 1
        if reported:
            runs.reported = True
            runs.upstream = upstream

    def deleted(self, run_key: str) -> None:
        self.runs[run_key].deleted = True

    # -- the end -------------------------------------------------------------------------------

    def unfinished(self) -> list[str]:
        """Workflows not terminal (and not purged)."""
        return [
            wid for wid in sorted(self.workflows)
            if (s := self._state(wid)) is not None and not s.status.is_terminal
        ]  # fmt: skip

    def final(self) -> None:
        """The end-of-run checks (faults are off and the system had time to converge)."""
        for workflow_id in self.unfinished():
            state = self._state(workflow_id)
            assert state is not None
            tasks = _tasks(self.workflows[workflow_id].wf, state)
            self.fail("end", f"{workflow_id}: still {state.status} ({tasks})")
        for workflow_id, known in sorted(self.workflows.items()):
            state = self._state(workflow_id)
            if state is None:
                if not known.purge_started:
                    self.fail("end", f"{workflow_id}: state blob vanished without a purge")
                continue
            if state.status is WorkflowStatus.CANCELLED and not known.cancels:
                self.fail("end", f"{workflow_id}: cancelled, but no user cancelled it")
            self._check_index(workflow_id, state)
            self._check_outputs(workflow_id, known, state)
        self._check_queues()
        for name, blob in sorted(self.raw.deadletters.container.blobs.items()):
            reason = json.loads(blob.data)["reason"]
            if not any(benign in reason for benign in BENIGN_DEAD_LETTERS):
                self.fail("end", f"an event was dead-lettered ({name}): {reason}")

    def _check_index(self, workflow_id: str, state: RuntimeState) -> None:
        rows = [r for r in self.raw.index.rows.values() if r.workflow_id == workflow_id]
        counts = {k: v for k, v in state.counts().items() if v}
        if len(rows) != 1 or rows[0].status != state.status or rows[0].counts != counts:
            got = [(r.status, r.counts) for r in rows]
            self.fail("end", f"{workflow_id}: index {got} != state {state.status} {counts}")

    def _check_outputs(self, workflow_id: str, known: Known, state: RuntimeState) -> None:
        wf = known.wf
        for i, task in enumerate(wf.tasks):
            if state.task(i).state != "completed":
                continue
            key = f"{state.incarnation}:{workflow_id}/{task.name}/{state.attempt[i]}"
            if (origin := state.cached.get(i)) is not None:  # a cache hit: its origin ran
                source = f":{origin.workflow_id}/{origin.task}/{origin.attempt}"
                if not any(k.endswith(source) and r.reported for k, r in self.runs.items()):
                    self.fail("end", f"{key}: reused {source[1:]}, which no worker reported")
                continue
            runs = self.runs.get(key)
            if runs is None or not runs.reported:
                self.fail("end", f"{key}: completed in the state but no worker reported it")
                continue
            expected = {
                wf.tasks[p].name: ref.inline
                for p in task.parents
                if (ref := state.outputs.get(p)) is not None
            }
            seen = runs.upstream or {}
            # Under "all" every parent's output reaches the child; under the other policies the
            # child may start before some parents finish, so it sees a part of them.
            partial = task.dep_policy != "all" and all(
                expected.get(k) == v for k, v in seen.items()
            )
            if seen != expected and not partial:
                self.fail("end", f"{key}: ran with upstream {seen}, parents say {expected}")

    def _check_queues(self) -> None:
        for name, queue in sorted(self.raw.queues.states.items()):
            if queue.messages:
                texts = [m.text[:120] for m in queue.messages.values()][:3]
                self.fail("end", f"queue {name} still holds {len(queue.messages)}: {texts}")


def _steps_back(old: RuntimeState | None, new: RuntimeState) -> list[str]:
    if old is None:
        return []
    if new.run < old.run:
        return [f"run went back from {old.run} to {new.run} (a lost update)"]
    problems = []
    for i in range(len(new.codes)):
        if new.attempt[i] < old.attempt[i]:
            problems.append(f"task {i} attempt went back {old.attempt[i]} -> {new.attempt[i]}")
        elif new.run == old.run and IS_TERMINAL[old.codes[i]] and new.codes[i] != old.codes[i]:
            problems.append(f"task {i} left its terminal state within run {new.run}")
    if new.run == old.run and old.status.is_terminal and new.status != old.status:
        problems.append(f"workflow went from {old.status} to {new.status} within run {new.run}")
    return problems[:3]


def _over_budget(wf: CompiledWorkflow, state: RuntimeState) -> list[str]:
    return [
        f"task {t.name} is at attempt {state.attempt[i]}, beyond its budget of"
        f" {t.num_retries + 1} (base {state.base_attempt.get(i, 0)})"
        for i, t in enumerate(wf.tasks)
        if state.attempt[i] - state.base_attempt.get(i, 0) > t.num_retries + 1
    ][:3]


def _tasks(wf: CompiledWorkflow, state: RuntimeState) -> str:
    return ", ".join(
        f"{t.name}={state.task(i).state}/{state.attempt[i]}" for i, t in enumerate(wf.tasks)
    )


__all__ = ["Known", "NotFoundError", "Oracle"]
