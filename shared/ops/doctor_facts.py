"""What ``dagq doctor`` looks at, gathered from storage once: the facts its checks judge.

The checks (``doctor_checks``) are pure functions of a ``Facts``; only ``gather`` does I/O. Cost
is bounded whatever the size of the deployment: at most ``MAX_ACTIVE_READ`` rows of active
workflows are read from the index, at most ``MAX_EXAMINED`` of them have their state read (the
oldest first: the likeliest to be stuck) and only while their task slots fit ``MAX_TASK_SLOTS``,
at most ``MAX_QUEUED`` queued tasks are kept, and the dead-letter listing stops after its own
budget (``shared.storage``). Where a budget cut the view short, ``Facts.partial`` says so, and
the ``partial`` check shows it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shared.engine.projection import index_row
from shared.engine.state import QUEUED
from shared.engine.step import in_state
from shared.errors import NotFoundError
from shared.names import ResourceNames
from shared.readback.workflow_reads import read_workflow
from shared.states import WorkflowStatus

if TYPE_CHECKING:
    from shared.settings import Settings
    from shared.storage.ports import DeadLetter, IndexRow, Storage
    from shared.storage.registry import FailureNote, WorkerRecord

MAX_ACTIVE_READ = 5000
"""Rows of active workflows one doctor run reads from the index."""
MAX_EXAMINED = 200
"""Active workflows whose state one doctor run reads."""
MAX_TASK_SLOTS = 100_000
"""Task slots (tasks of the running workflows examined) one doctor run decodes: decoding shares
the event loop with the coordinator in a Functions process (~1 s for 100,000 here)."""
MAX_QUEUED = 20_000
"""Queued tasks one doctor run keeps as facts."""
RECENT_DEAD_LETTERS = 20


@dataclass(frozen=True)
class QueuedTask:
    """A task the state says is queued: its message should be on its queue."""

    workflow_id: str
    task: str
    queue: str
    attempt: int
    sent_at: float
    """When its message was last sent."""
    visible_at: float
    """When its message becomes visible (later than ``sent_at`` for a delayed retry)."""


@dataclass(frozen=True)
class WorkflowFacts:
    """One examined workflow."""

    workflow_id: str
    name: str
    status: WorkflowStatus
    created_at: float
    queues: list[str]
    """Queues its definition uses."""


@dataclass(frozen=True)
class PartitionFacts:
    """One partition's coordinator side."""

    partition: int
    event_queue: str
    event_depth: int
    oldest_event_at: float | None
    """Insertion time of the oldest visible event, if any."""
    poison_queue: str
    poison_depth: int
    lease_held: bool
    last_sweep: float | None


@dataclass(frozen=True)
class Limits:
    """The settings the checks judge against."""

    worker_lost_after_s: float
    empty_queue_repair_after_s: float
    lost_dispatch_after_s: float
    activate_repair_after_s: float
    sweep_overdue_after_s: float
    event_stuck_after_s: float
    clock_skew_s: float
    dead_letter_window_s: float


@dataclass(frozen=True)
class Facts:
    """Everything one doctor run knows, as of ``now`` (the API's clock)."""

    now: float
    limits: Limits
    names: ResourceNames
    workers: list[WorkerRecord] = field(default_factory=list)
    known_queues: dict[str, float] = field(default_factory=dict)
    """Queues any worker ever polled -> when that was noted."""
    queue_depths: dict[str, int] = field(default_factory=dict)
    """Definition queue name -> messages on it (visible or not), for the queues in question."""
    workflows: list[WorkflowFacts] = field(default_factory=list)
    queued: list[QueuedTask] = field(default_factory=list)
    partitions: list[PartitionFacts] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    failures: list[FailureNote] = field(default_factory=list)
    """Storage failures the app's components or workers tolerated (``shared.storage.tolerated``)."""
    active_total: int = 0
    """Active workflows in the index (``workflows`` holds at most MAX_EXAMINED of them)."""
    workflow_id: str | None = None
    """The one workflow asked about, if any (then the first of ``workflows``)."""
    partial: list[str] = field(default_factory=list)
    """What a budget left unexamined (empty: the view is complete)."""


def limits_of(settings: Settings) -> Limits:
    """The limits of a deployment's settings."""
    return Limits(
        worker_lost_after_s=settings.worker_lost_after_s,
        empty_queue_repair_after_s=settings.empty_queue_repair_after_s,
        lost_dispatch_after_s=settings.lost_dispatch_after_s,
        activate_repair_after_s=settings.activate_repair_after_s,
        sweep_overdue_after_s=settings.sweep_overdue_after_s,
        event_stuck_after_s=settings.event_stuck_after_s,
        clock_skew_s=settings.clock_skew_s,
        dead_letter_window_s=settings.dead_letter_window_s,
    )


async def gather(
    storage: Storage, settings: Settings, *, now: float, workflow_id: str | None = None
) -> Facts:
    """Read the facts: the registry, the partitions, dead letters, and the active workflows —
    with ``workflow_id``, that one too, first and whatever the budgets (NotFoundError if it does
    not exist). Either way the counts are the deployment's, so ``doctor ID`` and ``doctor`` say
    the same numbers about the same stack."""
    partial: list[str] = []
    asked = None if workflow_id is None else await _row_of(storage, workflow_id)
    active = await storage.index.active(limit=MAX_ACTIVE_READ)
    active_total = len(active)
    if active_total >= MAX_ACTIVE_READ:
        partial.append(f"the index was read for the first {MAX_ACTIVE_READ:,} active"
                       " workflows only; there may be more")  # fmt: skip
    rows = _within_budget(sorted(active, key=lambda r: r.created_at), partial)
    if asked is not None:  # its row from its state (authoritative), not the index's copy
        rows = [asked, *(row for row in rows if row.workflow_id != asked.workflow_id)]
    examined = await asyncio.gather(*(_examine(storage, row) for row in rows))
    workflows = [wf for wf, _ in examined]
    queued = [task for _, tasks in examined for task in tasks][:MAX_QUEUED]
    queues = {q for wf in workflows for q in wf.queues}
    workers, known, partitions, letters, depths, failures = await asyncio.gather(
        storage.registry.workers(),
        storage.registry.queues(),
        _partitions(storage, settings.partitions),
        storage.deadletters.list(RECENT_DEAD_LETTERS),
        _depths(storage, settings.names, queues),
        storage.registry.failures(),
    )
    return Facts(
        now=now,
        limits=limits_of(settings),
        names=settings.names,
        workers=workers,
        known_queues=known,
        queue_depths=depths,
        workflows=workflows,
        queued=queued,
        partitions=partitions,
        dead_letters=letters,
        failures=failures,
        active_total=active_total,
        workflow_id=workflow_id,
        partial=partial,
    )


def _within_budget(rows: list[IndexRow], partial: list[str]) -> list[IndexRow]:
    """The first ``MAX_EXAMINED`` rows whose task slots (running workflows: their state is
    decoded) fit ``MAX_TASK_SLOTS``; what was left out is noted in ``partial``."""
    chosen: list[IndexRow] = []
    slots = 0
    for row in rows[:MAX_EXAMINED]:
        cost = row.total if row.status is WorkflowStatus.RUNNING else 0
        if slots + cost > MAX_TASK_SLOTS:
            continue
        slots += cost
        chosen.append(row)
    left = len(rows) - len(chosen)
    if left:
        partial.append(
            f"{left:,} of {len(rows):,} active workflows were not examined (at most"
            f" {MAX_EXAMINED} workflows and {MAX_TASK_SLOTS:,} task slots per run; the oldest"
            " first): their queued tasks are not judged"
        )
    return chosen


async def _row_of(storage: Storage, workflow_id: str) -> IndexRow:
    """The index row of one workflow, derived from its state (authoritative)."""
    wf, state = await read_workflow(storage, workflow_id)
    return index_row(wf, state)


async def _examine(storage: Storage, row: IndexRow) -> tuple[WorkflowFacts, list[QueuedTask]]:
    facts = WorkflowFacts(row.workflow_id, row.name, row.status, row.created_at, list(row.queues))
    if row.status is not WorkflowStatus.RUNNING:
        return facts, []
    try:
        wf, state = await read_workflow(storage, row.workflow_id)
    except NotFoundError:  # purged or half-submitted meanwhile: nothing queued to judge
        return facts, []
    queued = []
    for i in in_state(state, QUEUED):
        visible_ms = state.queued_ms[i]
        if visible_ms is None:
            continue
        sent_ms = state.sent_ms.get(i, visible_ms)
        queued.append(
            QueuedTask(
                workflow_id=row.workflow_id,
                task=wf.tasks[i].name,
                queue=wf.tasks[i].queue,
                attempt=state.attempt[i],
                sent_at=sent_ms / 1000,
                visible_at=visible_ms / 1000,
            )
        )
    return facts, queued


async def _depths(storage: Storage, names: ResourceNames, queues: set[str]) -> dict[str, int]:
    ordered = sorted(queues)
    counts = await asyncio.gather(
        *(storage.queues.get(names.task_queue(q)).approximate_count() for q in ordered)
    )
    return dict(zip(ordered, counts, strict=True))


async def _partitions(storage: Storage, count: int) -> list[PartitionFacts]:
    marks = await storage.workflows.job_marks()

    async def one(partition: int) -> PartitionFacts:
        view = storage.for_partition(partition)
        depth, oldest, poison, held = await asyncio.gather(
            view.event_queue.approximate_count(),
            view.event_queue.oldest_visible_at(),
            view.event_poison_queue.approximate_count(),
            view.lease.is_held(),
        )
        return PartitionFacts(
            partition=partition,
            event_queue=view.event_queue.name,
            event_depth=depth,
            oldest_event_at=oldest,
            poison_queue=view.event_poison_queue.name,
            poison_depth=poison,
            lease_held=held,
            last_sweep=marks.get(ResourceNames.sweep_mark(partition)),
        )

    return list(await asyncio.gather(*(one(p) for p in range(count))))
