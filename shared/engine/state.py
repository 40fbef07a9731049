"""The runtime state of one workflow: what the state blob holds, in columnar form.

One ``RuntimeState`` per workflow, mutated in place by ``shared.engine`` and serialised by
``shared.codec``. Columns (one list or array per field, indexed by task number) rather than one
object per task keep a 100,000-task workflow small in memory and fast to encode.

Timestamps are kept as integer milliseconds since the Unix epoch so that a state round-trips through
the codec exactly; ``TaskView`` turns them back into float seconds.

Dependency bookkeeping (``n_ok``/``n_bad``: how many of a task's parents are terminal and
succeeded / failed) is *derived* data: it always equals what the parents' states imply, so the codec
does not store it and ``rebuild_counters`` recomputes it after decoding.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from shared.caching.entry import CachedFrom
from shared.definition.workflow import CompiledWorkflow
from shared.engine.attempt_history import PastAttempt, archive
from shared.engine.item_list import ItemList
from shared.engine.task_moves import is_legal
from shared.errors import IllegalMoveError
from shared.limits import MAX_TASK_ERROR_CHARS
from shared.messages import OutputRef
from shared.states import TaskState, WorkflowStatus

TASK_STATES: tuple[TaskState, ...] = tuple(TaskState)
"""State code -> state. The codes are part of the state blob format (version 1): never reorder."""
CODE: dict[TaskState, int] = {s: i for i, s in enumerate(TASK_STATES)}
"""State -> state code."""

PENDING = CODE[TaskState.PENDING]
READY = CODE[TaskState.READY]
QUEUED = CODE[TaskState.QUEUED]
RUNNING = CODE[TaskState.RUNNING]
COMPLETED = CODE[TaskState.COMPLETED]
FAILED = CODE[TaskState.FAILED]
SKIPPED = CODE[TaskState.SKIPPED]
UPSTREAM_FAILED = CODE[TaskState.UPSTREAM_FAILED]
CANCELLED = CODE[TaskState.CANCELLED]

TERMINAL_CODES = frozenset(CODE[s] for s in TaskState if s.is_terminal)
OK_CODES = frozenset({COMPLETED, SKIPPED})
"""Terminal codes a child counts as a satisfied parent; every other terminal code is a failure."""
IS_TERMINAL: tuple[bool, ...] = tuple(c in TERMINAL_CODES for c in range(len(TASK_STATES)))
IS_OK: tuple[bool, ...] = tuple(c in OK_CODES for c in range(len(TASK_STATES)))
_LEGAL: tuple[tuple[bool, ...], ...] = tuple(
    tuple(is_legal(old, new) for new in TASK_STATES) for old in TASK_STATES
)
"""[old code][new code] -> whether ``shared.engine.task_moves.LEGAL_MOVES`` allows the move."""


def to_ms(t: float) -> int:
    """Seconds (float) -> integer milliseconds, the resolution of every task timestamp."""
    return round(t * 1000.0)


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000.0


@dataclass(frozen=True, slots=True)
class TaskView:
    """A read-only snapshot of one task's runtime state (for the API and the CLI)."""

    state: TaskState
    attempt: int
    """Current attempt number; 0 = never dispatched. Grows across retries and reruns."""
    queued_at: float | None
    """When the current attempt's message became visible to workers (after any retry delay)."""
    started_at: float | None
    finished_at: float | None
    exit_code: int | None
    error: str | None
    """Why it failed (reason or stderr tail), why it was skipped or cancelled, or the last failed
    attempt's error while a retry is queued."""
    output: OutputRef | None
    log_blob: str | None
    worker: str | None
    cached_from: CachedFrom | None = None
    """Set when the attempt completed from the result cache: the attempt whose result it reused."""


class RuntimeState:
    """The mutable state of one workflow run: workflow fields plus one column per task field.

    Only ``shared.engine`` mutates it (and ``shared.codec`` builds it), and only through the named
    operations below (``move``, ``begin_attempt``, ``adopt_attempt``, ``record_start``,
    ``record_result``, ``settle``, ``reopen``): each task-state change is checked against
    ``shared.engine.task_moves.LEGAL_MOVES``, and the per-attempt fields are reset in one place.
    Everyone else reads the workflow attributes, ``task(i)``, ``counts()`` and ``tally``.
    """

    __slots__ = (
        "attempt",
        "base_attempt",
        "cached",
        "cancel_requested",
        "cancel_requested_at",
        "codes",
        "created_at",
        "definition",
        "effective",
        "error",
        "errors",
        "exit_code",
        "expansions",
        "finished_at",
        "finished_ms",
        "history",
        "incarnation",
        "incarnation_blobs",
        "lists",
        "log_blob",
        "n_bad",
        "n_history",
        "n_ok",
        "n_terminal",
        "names",
        "outputs",
        "queued_ms",
        "ready",
        "run",
        "sent_ms",
        "started_ms",
        "status",
        "tally",
        "updated_at",
        "upstream_digests",
        "workers",
        "workflow_id",
        "writes",
    )

    def __init__(self, workflow_id: str, n_tasks: int, created_at: float) -> None:
        self.workflow_id = workflow_id
        self.status = WorkflowStatus.PENDING
        self.run = 1
        """Run number: 1 at submit, +1 per rerun from failure."""
        self.created_at = created_at
        self.incarnation: int | None = None
        """Which workflow of this id the state is (drawn at submit; None: older than incarnations).
        Task messages and events carry it; others are not applied."""
        self.incarnation_blobs = False  # blobs under {id}/{incarnation}/ (v6 on; v5 keeps flat)
        self.writes = 0  # coordinator writes so far: with run, its index rows' version (v7 on)
        self.definition: bytes | None = None
        """The definition blob's bytes when the state carries them (v9: a small definition's,
        given at submit; never changed after), so that its readers need not read that blob."""
        self.updated_at = created_at
        self.finished_at: float | None = None
        self.cancel_requested = False
        self.cancel_requested_at: float | None = None
        """When the cancel was applied (the sweep's cancel grace counts from here)."""
        self.error: str | None = None  # why the workflow failed or was cancelled (short)
        self.names: tuple[str, ...] = ()
        """Task names (the codec stores conventional blob names as flags); empty if unknown."""

        # -- per task columns (index = task number) --
        self.codes = bytearray(n_tasks)
        """State code per task (see ``TASK_STATES``); all PENDING (0) at first."""
        self.attempt = [0] * n_tasks
        self.queued_ms: list[int | None] = [None] * n_tasks
        self.started_ms: list[int | None] = [None] * n_tasks
        self.finished_ms: list[int | None] = [None] * n_tasks
        self.exit_code: list[int | None] = [None] * n_tasks
        # -- sparse per task fields (rare, or strings) --
        self.errors: dict[int, str] = {}
        self.outputs: dict[int, OutputRef] = {}
        self.log_blob: dict[int, str] = {}
        self.workers: dict[int, str] = {}
        self.base_attempt: dict[int, int] = {}
        """Task -> its attempt number before this run's first dispatch (only for tasks reopened
        by a rerun): the retry budget counts attempts since then."""
        self.sent_ms: dict[int, int] = {}
        """Queued task -> when its message was last re-sent by the lost-dispatch sweep."""
        self.upstream_digests: dict[int, str] = {}
        """Task in flight (policy not ``all``) -> the upstream digest its attempt was sent with."""
        self.history: dict[int, list[PastAttempt]] = {}
        """Task -> its earlier attempts, oldest first (bounded: see ``attempt_history``)."""
        self.n_history = 0
        """Earlier attempts kept in all (derived: not stored)."""
        self.cached: dict[int, CachedFrom] = {}
        """Task -> the attempt whose cached result its current attempt reused."""
        self.lists: dict[int, ItemList] = {}
        """``foreach_from`` task -> the list captured for it (kept while the workflow lives)."""
        self.expansions: list[tuple[int, int]] = []
        """(``foreach_from`` task, number of tasks it expanded to), in the order they expanded:
        the expanded tasks are numbered after the definition's, in this order."""
        self.effective: tuple[CompiledWorkflow, CompiledWorkflow] | None = None
        """Cache of ``shared.engine.expansion.expanded``: (definition, definition + expansions)."""
        self.ready: deque[int] = deque()
        """READY tasks waiting for a max_parallelism slot, oldest first. May hold entries that are
        no longer READY (removed lazily when popped)."""

        # -- derived bookkeeping (not stored; see rebuild_counters) --
        self.n_ok = [0] * n_tasks
        """Task -> number of its parents that are terminal and satisfy it (completed/skipped)."""
        self.n_bad = [0] * n_tasks
        """Task -> number of its parents that are terminal and failed (failed/upstream_failed/
        cancelled)."""
        self.tally = [0] * len(TASK_STATES)
        """State code -> number of tasks in that state (read-only outside this class)."""
        self.tally[PENDING] = n_tasks
        self.n_terminal = 0

    # -- reading ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.codes)

    def state_of(self, i: int) -> TaskState:
        """The state of task ``i``."""
        return TASK_STATES[self.codes[i]]

    def task(self, i: int) -> TaskView:
        """A read-only snapshot of task ``i``."""
        return TaskView(
            state=TASK_STATES[self.codes[i]],
            attempt=self.attempt[i],
            queued_at=_seconds(self.queued_ms[i]),
            started_at=_seconds(self.started_ms[i]),
            finished_at=_seconds(self.finished_ms[i]),
            exit_code=self.exit_code[i],
            error=self.errors.get(i),
            output=self.outputs.get(i),
            log_blob=self.log_blob.get(i),
            worker=self.workers.get(i),
            cached_from=self.cached.get(i),
        )

    def counts(self) -> dict[str, int]:
        """Task state value -> number of tasks in it (every state present, zeros included)."""
        return {s.value: self.tally[c] for c, s in enumerate(TASK_STATES)}

    def count(self, state: TaskState) -> int:
        """How many tasks are in ``state`` (O(1))."""
        return self.tally[CODE[state]]

    @property
    def blob_incarnation(self) -> int | None:  # what names the attempt blobs (None: flat)
        return self.incarnation if self.incarnation_blobs else None

    @property
    def in_flight(self) -> int:
        """Queued + running tasks: what max_parallelism caps."""
        return self.tally[QUEUED] + self.tally[RUNNING]

    @property
    def all_terminal(self) -> bool:
        return self.n_terminal == len(self.codes)

    # -- named operations (engine only) ----------------------------------------------------------

    def move(self, i: int, code: int) -> None:
        """Move task ``i`` to state ``code``, keeping the per-state tally and terminal counter.

        Raises IllegalMoveError for a move ``LEGAL_MOVES`` does not allow. Does not touch children:
        that is the engine's job (once, on entering a terminal state)."""
        old = self.codes[i]
        if old == code:
            return
        if not _LEGAL[old][code]:
            raise IllegalMoveError(
                f"task {i} of workflow {self.workflow_id!r}: {TASK_STATES[old]} ->"
                f" {TASK_STATES[code]} is not a legal move"
            )
        self.codes[i] = code
        self.tally[old] -= 1
        self.tally[code] += 1
        self.n_terminal += IS_TERMINAL[code] - IS_TERMINAL[old]

    def begin_attempt(self, i: int, attempt: int, visible_ms: int) -> None:
        """Task ``i``'s attempt ``attempt`` was sent; its message is visible from ``visible_ms``."""
        if attempt != self.attempt[i]:
            archive(self, i, FAILED)
        self.attempt[i] = attempt
        self.move(i, QUEUED)
        self._reset_attempt(i)
        self.queued_ms[i] = visible_ms

    def adopt_attempt(self, i: int, attempt: int, now_ms: int) -> None:
        """An event reports ``attempt``, ahead of the state: a pass that crashed before its flush
        dispatched it. Take it as the current attempt (queued now, unless already in flight)."""
        archive(self, i, FAILED)
        self.attempt[i] = attempt
        self._reset_attempt(i)
        if self.codes[i] != QUEUED and self.codes[i] != RUNNING:
            self.move(i, QUEUED)  # a stale ready-queue entry is dropped when popped
            self.queued_ms[i] = now_ms

    def _reset_attempt(self, i: int) -> None:
        """Forget what the previous attempt of task ``i`` reported (the one place that knows the
        per-attempt fields). Errors stay: a retry shows why the previous attempt failed."""
        self.started_ms[i] = self.finished_ms[i] = self.exit_code[i] = None
        self.sent_ms.pop(i, None)
        self.upstream_digests.pop(i, None)
        self.workers.pop(i, None)
        self.log_blob.pop(i, None)
        self.cached.pop(i, None)

    def record_start(self, i: int, started_ms: int, worker: str | None) -> None:
        """A worker started the current attempt of task ``i``."""
        self.move(i, RUNNING)
        self.started_ms[i] = started_ms
        if worker is not None:
            self.workers[i] = worker

    def record_result(
        self,
        i: int,
        *,
        started_ms: int | None,
        finished_ms: int,
        exit_code: int | None,
        output: OutputRef | None = None,
        log_blob: str | None = None,
        worker: str | None = None,
    ) -> None:
        """What the worker reported when the current attempt of task ``i`` ended (the state move
        follows: ``settle``, or a retry's ``begin_attempt``)."""
        if started_ms is not None:
            self.started_ms[i] = started_ms
        self.finished_ms[i] = finished_ms
        self.exit_code[i] = exit_code
        if output is not None:
            self.outputs[i] = output
        if log_blob is not None:
            self.log_blob[i] = log_blob
        if worker is not None:
            self.workers[i] = worker

    def note_cached(self, i: int, origin: CachedFrom) -> None:
        """The current attempt of task ``i`` completed with ``origin``'s cached result."""
        self.cached[i] = origin

    def note_error(self, i: int, text: str | None) -> None:
        """Keep ``text`` (truncated) as task ``i``'s error; None clears it."""
        if text is None:
            self.errors.pop(i, None)
        else:
            self.errors[i] = text[:MAX_TASK_ERROR_CHARS]

    def settle(self, i: int, code: int, error: str | None, now_ms: int) -> None:
        """Task ``i`` reaches terminal state ``code`` (finished now, unless a result said when)."""
        self.move(i, code)
        self.sent_ms.pop(i, None)
        self.upstream_digests.pop(i, None)
        if error is not None:
            self.note_error(i, error)
        if self.finished_ms[i] is None:
            self.finished_ms[i] = now_ms

    def grow(self, n: int) -> None:
        """Add ``n`` pending tasks (an expansion) after the existing ones."""
        self.codes.extend(bytes(n))
        for column in (self.queued_ms, self.started_ms, self.finished_ms, self.exit_code):
            column.extend([None] * n)
        for counters in (self.attempt, self.n_ok, self.n_bad):
            counters.extend([0] * n)
        self.tally[PENDING] += n

    def reopen(self, i: int, base: int) -> None:
        """Rerun from failure: task ``i`` is PENDING again with nothing of its previous run left
        but its earlier attempts; its attempts go on after ``base`` (at least its attempt number:
        attempts only grow) and its retry budget counts from there."""
        archive(self, i, self.codes[i])
        self.move(i, PENDING)
        self.attempt[i] = self.base_attempt[i] = max(base, self.attempt[i])
        self._reset_attempt(i)
        self.queued_ms[i] = None
        self.errors.pop(i, None)
        self.outputs.pop(i, None)

    def rebuild_counters(self, wf: CompiledWorkflow) -> None:
        """Recompute the derived bookkeeping (state counts, terminal counter, per-task parent
        counters) from the task states: O(tasks + edges). Used after decoding."""
        codes = self.codes
        count = [0] * len(TASK_STATES)
        for c in range(len(TASK_STATES)):
            count[c] = codes.count(c)
        self.tally = count
        self.n_terminal = sum(count[c] for c in TERMINAL_CODES)
        n_ok = [0] * len(codes)
        n_bad = [0] * len(codes)
        is_terminal, is_ok = IS_TERMINAL, IS_OK
        for parent, kids in enumerate(wf.children):
            code = codes[parent]
            if not is_terminal[code] or not kids:
                continue
            target = n_ok if is_ok[code] else n_bad
            for child in kids:
                target[child] += 1
        self.n_ok = n_ok
        self.n_bad = n_bad
