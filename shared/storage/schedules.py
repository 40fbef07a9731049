"""The schedules port: each schedule (``ScheduleSpec``) with what the
sweep keeps of it, in a table of the app's own (``{prefix}Schedules``, ``shared.names``): the
workers' identity has no role there.

A record is replaced as a whole, under its ETag (If-Match), so a user's pause and the sweep's
note of a started slot never undo each other: the loser reads again.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Literal, Protocol

Concurrency = Literal["allow", "forbid", "replace"]
CONCURRENCY: tuple[Concurrency, ...] = ("allow", "forbid", "replace")


@dataclass(frozen=True)
class ScheduleSpec:
    """What a user asks for: run ``definition`` at every slot of ``cron`` in ``timezone``
    (checked by ``shared.definition.schedule.spec_problems``)."""

    name: str
    cron: str
    definition: str
    """The workflow definition's text, as submitted (YAML or JSON)."""
    timezone: str = "UTC"
    params: dict[str, str] = field(default_factory=dict)
    """Parameter values of every run (``--param``; strings, as on the wire)."""
    notify: builtins.list[str] = field(default_factory=list)
    """Webhook URLs of every run (``--notify``)."""
    concurrency: Concurrency = "allow"
    catch_up: int = 1


@dataclass(frozen=True)
class ScheduleRecord:
    """A stored schedule."""

    spec: ScheduleSpec
    created_at: float
    not_before: float
    """Slots after this time only: the creation, or the last resume (a pause skips its slots)."""
    paused: bool = False
    last_slot: float | None = None
    """The latest slot the sweep started (or skipped under ``forbid``)."""
    runs: builtins.list[str] = field(default_factory=list)
    """Ids of the latest runs started, oldest first (``KEPT_RUNS``)."""
    note: str | None = None
    """What the sweep last could not do (a slot skipped, a submit refused), or None."""
    starting: builtins.list[str] = field(default_factory=list)
    """Ids of runs whose submit a sweep began and saw no answer to (noted before the submit):
    the next sweep submits each again, whether the schedule was paused meanwhile or its slot has
    left the catch-up, so no run is left half made (a state without its index row or activate
    event, which no sweep would ever see; simulation seed 125)."""
    etag: str = field(default="", compare=False)
    """The stored version this record was read at (for ``update``)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def after(self) -> float:
        """Slots after this time are the sweep's to start."""
        return max(self.not_before, self.last_slot or float("-inf"))


class Schedules(Protocol):
    """The schedules table."""

    async def create(self, record: ScheduleRecord) -> bool:
        """Insert a new schedule. True if created; False if one of its name exists."""
        ...

    async def get(self, name: str) -> ScheduleRecord | None:
        """One schedule, with its ETag, or None."""
        ...

    async def list(self) -> builtins.list[ScheduleRecord]:
        """Every schedule, by name (bounded: ``MAX_SCHEDULES``; an unreadable row is skipped)."""
        ...

    async def update(self, record: ScheduleRecord) -> str:
        """Replace the schedule if it is still at ``record.etag``; return the new ETag. Raises
        StaleStateError if it changed, NotFoundError if it is gone."""
        ...

    async def delete(self, name: str, etag: str | None = None) -> bool:
        """Delete a schedule (with ``etag``: only if it is still at it, else StaleStateError).
        True if there was one."""
        ...


MAX_SCHEDULES = 1000
"""Most schedules one deployment keeps (a create beyond is refused)."""
