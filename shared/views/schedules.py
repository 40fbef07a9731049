"""Schedules (``/schedules``): a workflow definition run on a cron schedule (issue 29)."""

from __future__ import annotations

from typing import Literal

from shared.states import WorkflowStatus
from shared.views.base import Epoch, View


class ScheduleRun(View):
    """One run a schedule started: its workflow (id ``{name}-{UTC slot}``) and its status."""

    id: str
    slot: Epoch
    """The slot it was started for (UTC)."""
    status: WorkflowStatus | None
    """The workflow's status now (null: purged since)."""
    url: str


class ScheduleView(View):
    """A schedule: when it runs, what it passes, its next slots and latest runs."""

    name: str
    cron: str
    """Five fields (minute hour day-of-month month day-of-week) in ``timezone``."""
    timezone: str
    params: dict[str, str]
    """Parameter values of every run (as on the wire: strings)."""
    notify: list[str]
    """Webhook URLs of every run."""
    concurrency: Literal["allow", "forbid", "replace"]
    """While the previous run is active, a slot starts anyway (allow), is skipped (forbid) or
    cancels that run first (replace)."""
    catch_up: int
    """Most missed slots started after downtime, the latest ones (1-100)."""
    paused: bool
    created_at: Epoch
    next_runs: list[Epoch]
    """The next slots (UTC; none while paused)."""
    last_slot: Epoch | None
    """The latest slot the sweep handled."""
    note: str | None
    """What the sweep last could not do (a slot skipped or not started), or null."""
    runs: list[ScheduleRun]
    """The latest runs, newest first (``GET /schedules/{name}``: up to 10; a listing: the
    latest one)."""
    url: str


class ScheduleList(View):
    """``GET /schedules``: every schedule, by name."""

    schedules: list[ScheduleView]


class ScheduleDeleted(View):
    """``DELETE /schedules/{name}``: the schedule is gone (its runs are not touched)."""

    name: str
    deleted: bool
    """False: there was no schedule of that name (nothing changed)."""
