"""Reads about what a task is doing and did: its attempts, its (live) log, its progress.

- ``task_attempts``: every attempt, oldest first: the earlier ones the state keeps
  (``shared.engine.attempt_history``), the older ones by number only (``kept: false``), and the
  current one.
- ``read_log``: what exists so far of one attempt's log (the latest with a log by default), from
  a byte offset, with whether it may still grow.
- ``live_progress``: the progress and metrics of a workflow's running attempts, from the worker
  registry (the workers send them with their heartbeats; they are never in the state).

Blob names are rebuilt from validated ids and attempt numbers, never taken from stored strings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.engine.state import PENDING, QUEUED, READY, RUNNING, TASK_STATES
from shared.errors import NotFoundError
from shared.limits import MAX_LOG_READ_BYTES
from shared.names import ResourceNames
from shared.states import TaskState

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow
    from shared.engine.attempt_history import PastAttempt
    from shared.engine.state import RuntimeState
    from shared.progress import TaskProgress
    from shared.storage.ports import Storage
    from shared.views import AttemptList

log = logging.getLogger("dagq.api")

MAX_LISTED_ATTEMPTS = 100
"""Most attempts ``GET .../attempts`` lists (the most recent)."""


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000.0


def attempt_path(workflow_id: str, task: str, attempt: int) -> str:
    """The API path that reads one attempt's log."""
    from urllib.parse import quote

    return f"/api/workflows/{quote(workflow_id)}/tasks/{quote(task)}/log?attempt={attempt}"


# -- attempts ------------------------------------------------------------------------------------


def task_attempts(
    wf: CompiledWorkflow, state: RuntimeState, i: int, *, outputs_container: str
) -> AttemptList:
    """``GET .../tasks/{task}/attempts``: the task's attempts, oldest first."""
    from shared.views import AttemptList, AttemptView, LogLocation

    name, queue = wf.tasks[i].name, wf.tasks[i].queue
    current = state.attempt[i]
    kept = {past.attempt: past for past in state.history.get(i, [])}

    def location(attempt: int) -> LogLocation:
        blob = ResourceNames.log_blob(state.workflow_id, name, attempt, state.blob_incarnation)
        return LogLocation(container=outputs_container, blob=blob)

    items = []
    for attempt in range(max(1, current - MAX_LISTED_ATTEMPTS + 1), current + 1):
        fields = _current_fields(state, i) if attempt == current else _past_fields(kept, attempt)
        has_log = fields.pop("has_log")
        fields["log"] = location(attempt) if has_log else None
        fields["log_url"] = attempt_path(state.workflow_id, name, attempt) if has_log else None
        items.append(
            AttemptView(attempt=attempt, current=attempt == current, queue=queue, **fields)
        )
    return AttemptList(workflow_id=state.workflow_id, task=name, items=items)


def _current_fields(state: RuntimeState, i: int) -> dict[str, Any]:
    view = state.task(i)
    running = state.codes[i] in (QUEUED, RUNNING)
    return {
        "kept": True, "state": view.state, "queued_at": view.queued_at,
        "started_at": view.started_at, "finished_at": view.finished_at,
        "exit_code": view.exit_code, "error": None if running else view.error,
        "worker": view.worker, "has_log": view.log_blob is not None or running,
    }  # fmt: skip


def _past_fields(kept: dict[int, PastAttempt], attempt: int) -> dict[str, Any]:
    past = kept.get(attempt)
    if past is None:  # older than the state keeps: its log may still be there
        return {
            "kept": False, "state": None, "queued_at": None, "started_at": None,
            "finished_at": None, "exit_code": None, "error": None, "worker": None,
            "has_log": True,
        }  # fmt: skip
    return {
        "kept": True, "state": TASK_STATES[past.code], "queued_at": _seconds(past.queued_ms),
        "started_at": _seconds(past.started_ms), "finished_at": _seconds(past.finished_ms),
        "exit_code": past.exit_code, "error": past.error, "worker": past.worker,
        # An attempt that started wrote a live log, even if its worker died before reporting.
        "has_log": past.has_log or past.started_ms is not None,
    }  # fmt: skip


# -- logs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogSlice:
    """Part of one attempt's log."""

    attempt: int
    data: bytes
    """The bytes from ``offset`` on (at most ``MAX_LOG_READ_BYTES``)."""
    offset: int
    size: int
    """The log's size in storage now."""
    growing: bool
    """The attempt has not ended: the log may still grow (read on from ``offset + len(data)``)."""


def _may_start(state: RuntimeState, i: int) -> bool:
    """Task ``i`` has no attempt yet and may still get one (its workflow has not ended)."""
    return (
        state.attempt[i] == 0
        and state.codes[i] in (PENDING, READY)
        and not state.status.is_terminal
    )


def _never_ran(state: RuntimeState, i: int, task: str) -> str:
    """Why task ``i`` has no log at all."""
    view = state.task(i)
    why = view.error or view.state.value
    if view.state in (TaskState.PENDING, TaskState.READY):
        return f"task {task!r} has not run yet ({view.state.value}): no log"
    return f"task {task!r} never ran, so it has no log: {why}"


def _pick_attempt(state: RuntimeState, i: int, task: str, attempt: int | None) -> int:
    current = state.attempt[i]
    if current == 0:
        raise NotFoundError(_never_ran(state, i, task))
    if attempt is not None:
        if not 1 <= attempt <= current:
            raise NotFoundError(f"task {task!r} has no attempt {attempt} (attempts 1-{current})")
        return attempt
    if state.codes[i] in (QUEUED, RUNNING) or i in state.log_blob:
        return current
    for past in reversed(state.history.get(i, [])):  # the current one left no log
        if past.has_log or past.started_ms is not None:
            return past.attempt
    return current


async def read_log(
    storage: Storage,
    wf: CompiledWorkflow,
    state: RuntimeState,
    i: int,
    *,
    attempt: int | None = None,
    offset: int = 0,
) -> LogSlice:
    """What exists so far of a task attempt's log, from byte ``offset``. NotFoundError (saying
    why) when the attempt has no log. A task that has not started yet but may (pending or ready
    in a workflow that runs) has an empty, growing log of attempt 0: readers wait on it instead
    of treating it as an error (the dashboard logged each such 404; ``dagq logs -f`` gave up)."""
    task = wf.tasks[i].name
    if attempt is None and _may_start(state, i):
        return LogSlice(0, b"", offset, 0, True)
    number = _pick_attempt(state, i, task, attempt)
    growing = number == state.attempt[i] and state.codes[i] in (QUEUED, RUNNING)
    blob = ResourceNames.log_blob(state.workflow_id, task, number, state.blob_incarnation)
    try:
        data, size = await storage.outputs.read_range(blob, offset, MAX_LOG_READ_BYTES)
    except NotFoundError:
        if not growing:
            error = state.errors.get(i) if number == state.attempt[i] else None
            raise NotFoundError(
                f"attempt {number} of task {task!r} left no log" + (f": {error}" if error else "")
            ) from None
        data, size = b"", 0  # not started yet: nothing printed so far
    return LogSlice(number, data, offset, size, growing)


# -- progress ------------------------------------------------------------------------------------


async def live_progress(
    storage: Storage, state: RuntimeState
) -> dict[tuple[str, int], TaskProgress]:
    """(task name, attempt) -> the latest progress of the workflow's running attempts, from
    the worker registry: the row of the worker the state names for the task, no other
    (empty when nothing runs; advisory: a registry failure is logged)."""
    if not (state.count(TaskState.RUNNING) or state.count(TaskState.QUEUED)):
        return {}
    try:
        records = await storage.registry.workers()
    except Exception as exc:
        log.warning("could not read task progress from the worker registry: %s", exc)
        return {}
    # A row says what its writer chose (any worker can write any row: docs/security.md), so it
    # counts only for the tasks the state says its worker runs, never another worker's.
    runner = {state.names[i]: name for i, name in state.workers.items() if i < len(state.names)}
    return {
        (t.task, t.attempt): t.progress
        for record in records
        for t in record.tasks
        if t.workflow_id == state.workflow_id
        and row_speaks_for(record.worker_id, runner.get(t.task))
        and t.incarnation in (None, state.incarnation)  # never a purged workflow's attempt
        and t.progress is not None
        and not t.progress.empty
    }


def row_speaks_for(row_worker: str, named: str | None) -> bool:
    """Whether a registry row of ``row_worker`` may speak for a task whose state names ``named``
    as its worker: only that worker's own row (issue #30, item 5)."""
    return named is not None and row_worker == named


def progress_fields(
    progress: dict[tuple[str, int], TaskProgress], state: RuntimeState, i: int, task: str
) -> dict[str, Any]:
    """The ``progress``/``metrics`` fields of a task view (none unless it runs and reported)."""
    if state.codes[i] not in (QUEUED, RUNNING):
        return {}
    found = progress.get((task, state.attempt[i]))
    if found is None:
        return {}
    fields: dict[str, Any] = {}
    if found.progress is not None:
        fields["progress"] = found.progress
    if found.metrics:
        fields["metrics"] = dict(found.metrics)
    return fields
