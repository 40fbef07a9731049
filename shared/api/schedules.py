"""The API's schedule operations (issue 29): create, list, show, pause, resume, delete.

No HTTP here (``shared.api.schedule_http`` is the shell): each function takes a ``Storage`` and
returns a view or raises dagq's errors (400 for a bad schedule, 404, 409). A schedule is checked
whole before anything is written: its name, cron expression, time zone, concurrency and catch-up
(``shared.definition.schedule``), and its definition compiled with its parameters and webhooks
as each run will be. The sweep that starts the runs is ``shared.api.schedule_sweep``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from shared.definition.schedule import (
    KEPT_RUNS,
    next_slots,
    schedule_name_problem,
    slot_of_run,
    spec_problems,
)
from shared.errors import ConflictError, InvalidIdError, NotFoundError, RequestError
from shared.storage.schedules import MAX_SCHEDULES, ScheduleRecord, ScheduleSpec

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow
    from shared.states import WorkflowStatus
    from shared.storage.ports import Storage
    from shared.views import ScheduleDeleted, ScheduleList, ScheduleRun, ScheduleView

UrlFor = Callable[[str], str]
NEXT_RUNS = 3
"""Next slots a view shows."""


def check_name(name: str) -> None:
    """InvalidIdError (400) if ``name`` cannot name a schedule."""
    problem = schedule_name_problem(name)
    if problem:
        raise InvalidIdError(problem)


def check_spec(
    spec: ScheduleSpec,
    fmt: Literal["json", "yaml"] | None = None,
    *,
    max_expansion_width: int | None = None,
) -> None:
    """Raise a 400 naming every problem of ``spec`` (DefinitionError for its definition: it is
    compiled with the schedule's params and webhooks, as each run will be). CPU-bound."""
    problems = spec_problems(
        name=spec.name, cron=spec.cron, definition=spec.definition, timezone=spec.timezone,
        params=spec.params, notify=spec.notify, concurrency=spec.concurrency,
        catch_up=spec.catch_up,
    )  # fmt: skip
    if problems:
        raise RequestError(
            400, "; ".join(problems), problem_type="invalid-schedule", title="Invalid schedule"
        )
    compile_spec(spec, fmt, max_expansion_width=max_expansion_width)


def compile_spec(
    spec: ScheduleSpec,
    fmt: Literal["json", "yaml"] | None = None,
    *,
    max_expansion_width: int | None = None,
) -> tuple[CompiledWorkflow, bytes]:
    """A run's workflow: the definition compiled with the schedule's params and webhooks
    (``service.compile_definition``; DefinitionError naming every problem). CPU-bound."""
    from shared.api.service import compile_definition

    return compile_definition(
        spec.definition, fmt, max_expansion_width=max_expansion_width,
        notify=spec.notify or None, params=spec.params or None,
    )  # fmt: skip


async def create(
    storage: Storage, spec: ScheduleSpec, *, now: float
) -> tuple[ScheduleRecord, bool]:
    """Store a checked schedule. Returns it and whether it was created: a schedule of the same
    name and the same spec is found (200), one with another spec is a ConflictError (409)."""
    existing = await storage.schedules.get(spec.name)
    if existing is None:
        if len(await storage.schedules.list()) >= MAX_SCHEDULES:
            raise ConflictError(f"this deployment has {MAX_SCHEDULES} schedules: delete one first")
        record = ScheduleRecord(spec=spec, created_at=now, not_before=now)
        if await storage.schedules.create(record):
            return await _read(storage, spec.name), True
        existing = await _read(storage, spec.name)
    if existing.spec != spec:
        raise ConflictError(
            f"schedule {spec.name!r} exists with another definition or settings: delete it"
            " first, or choose another name"
        )
    return existing, False


async def _read(storage: Storage, name: str) -> ScheduleRecord:
    record = await storage.schedules.get(name)
    if record is None:
        raise NotFoundError(f"schedule {name!r} does not exist")
    return record


async def set_paused(storage: Storage, name: str, paused: bool, *, now: float) -> ScheduleRecord:
    """Pause or resume a schedule (idempotent). A resume starts with the slots after ``now``:
    the slots of the pause are not caught up."""
    for _ in range(5):
        record = await _read(storage, name)
        if record.paused == paused:
            return record
        changed = replace(record, paused=paused)
        if not paused:
            changed = replace(changed, not_before=max(now, record.not_before))
        from shared.errors import StaleStateError

        try:
            await storage.schedules.update(changed)
        except StaleStateError:
            continue  # the sweep noted a slot meanwhile: read again
        return await _read(storage, name)
    raise ConflictError(f"schedule {name!r} keeps changing: try again")


async def delete(storage: Storage, name: str, etag: str | None = None) -> ScheduleDeleted:
    """Delete a schedule (its runs stay; with ``etag``, only as it was read: StaleStateError).
    Idempotent. The API deletes through ``shared.api.schedule_sweep.finish_and_delete``, which
    first finishes the runs a sweep left half made."""
    from shared.views import ScheduleDeleted

    return ScheduleDeleted(name=name, deleted=await storage.schedules.delete(name, etag))


async def _status(storage: Storage, workflow_id: str) -> WorkflowStatus | None:
    from shared.codec.metadata import status_from_metadata

    try:
        return status_from_metadata(await storage.workflows.state_metadata(workflow_id))
    except NotFoundError:
        return None


async def view(
    storage: Storage, record: ScheduleRecord, *, now: float, url_for: UrlFor, workflow_url: UrlFor,
    runs: int = KEPT_RUNS,
) -> ScheduleView:  # fmt: skip
    """The view of ``record``, with the status of its latest ``runs`` runs (one HEAD each)."""
    from shared.views import ScheduleRun, ScheduleView

    spec = record.spec
    latest = list(reversed(record.runs))[:runs]
    statuses = await asyncio.gather(*(_status(storage, run) for run in latest))
    shown: list[ScheduleRun] = []
    for run, status in zip(latest, statuses, strict=True):
        slot = slot_of_run(spec.name, run)
        if slot is not None:
            shown.append(ScheduleRun(id=run, slot=slot, status=status, url=workflow_url(run)))
    upcoming = (
        [] if record.paused
        else next_slots(spec.cron, spec.timezone, after=max(now, record.after), count=NEXT_RUNS)
    )  # fmt: skip
    return ScheduleView(
        name=spec.name, cron=spec.cron, timezone=spec.timezone, params=spec.params,
        notify=spec.notify, concurrency=spec.concurrency, catch_up=spec.catch_up,
        paused=record.paused, created_at=record.created_at, next_runs=upcoming,
        last_slot=record.last_slot, note=record.note, runs=shown, url=url_for(spec.name),
    )  # fmt: skip


async def show(
    storage: Storage, name: str, *, now: float, url_for: UrlFor, workflow_url: UrlFor
) -> ScheduleView:
    """One schedule with its latest runs. NotFoundError if there is none."""
    record = await _read(storage, name)
    return await view(storage, record, now=now, url_for=url_for, workflow_url=workflow_url)


async def list_all(
    storage: Storage, *, now: float, url_for: UrlFor, workflow_url: UrlFor
) -> ScheduleList:
    """Every schedule, by name, each with its latest run."""
    from shared.views import ScheduleList

    records = await storage.schedules.list()
    gate = asyncio.Semaphore(16)

    async def one(record: ScheduleRecord) -> ScheduleView:
        async with gate:
            return await view(
                storage, record, now=now, url_for=url_for, workflow_url=workflow_url, runs=1
            )

    return ScheduleList(schedules=list(await asyncio.gather(*(one(r) for r in records))))
