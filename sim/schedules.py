"""Schedules in the simulation (issue 29): users create, pause, resume and delete them, the
partition-0 coordinators' sweeps start their runs, and the oracle's schedule invariants.

The virtual clock starts at ``sim.loop.EPOCH`` (2027-01-15 08:00 UTC, a whole minute) and cron's
finest grain is the minute, so a schedule's cron names a few minutes of that hour (``1-3 8 15 1
*``): slots at virtual seconds 60, 120 and 180 at most, two of them in the fault phase, and a
last slot, after which the run can converge. The sweep is the app's
(``shared.api.schedule_sweep.run_schedules``, called as ``shared.api.triggers`` calls it) after
partition 0's sweeps, under its lease, on each instance's skewed clock.

The invariants (``sim.schedule_book.ScheduleBook``), each judged the instant storage changes,
but the last:

- **one run per slot**: the sweeps create the state of a slot's run (``{name}-{slot}``) at most
  once, whatever purges and re-submits of the id users make;
- **no run outside the schedule's life**: a sweep never creates the run of a slot at or before
  the ``not_before`` the schedule was created with, of a slot more than ``max_skew_s`` after a
  pause took effect and up to the ``not_before`` its resume stored, or of a slot more than
  ``max_skew_s`` after its delete took effect (a sweep reads its clock, off by up to
  ``max_skew_s``, before it lists the schedules: a slot it finds due is at most that much after
  its listing); and no sweep pauses or resumes a schedule;
- **forbid**: as a sweep creates a run of a ``forbid`` schedule, no other run the sweeps created
  of it is active (a run a user made active again, by a retry or a submit of its id, aside);
- **every due slot ran** (at the end): of a schedule neither deleted nor paused, the last
  ``catch_up`` slots after its ``not_before`` each got a run; under ``forbid`` a slot may have
  been skipped if an earlier run of the schedule was active then (it ended no earlier than
  ``max_skew_s`` before the slot).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import shared.storage.memory.schedules as memory_schedules
from shared.api import schedules as api_schedules
from shared.api import service
from shared.api.schedule_sweep import finish_and_delete, run_schedules
from shared.limits import MAX_COUNTER
from shared.storage.memory.schedules import MemorySchedules
from shared.storage.ports import Storage
from shared.storage.schedules import CONCURRENCY, ScheduleRecord, ScheduleSpec
from sim import loop as vloop
from sim.faults import Tooth
from sim.keys import SIGNER
from sim.teeth import Patch, patching
from sim.workload import definition

if TYPE_CHECKING:
    from sim.world_view import World

OPS: dict[str, int] = {
    "schedule_create": 4, "schedule_pause": 3, "schedule_resume": 1, "schedule_delete": 1
}  # fmt: skip
"""The users' schedule operations and their weights in the default mix (``sim.users.OPS``)."""

LAST_MINUTE = 3
"""The latest minute after ``EPOCH`` a schedule has a slot at (the run then converges)."""

Call = Callable[["World", str, Callable[[Storage], Awaitable[Any]]], Awaitable[Any]]


def _cron(first: int, last: int) -> str:
    at = datetime.fromtimestamp(vloop.EPOCH, UTC)
    minutes = f"{first}" if first == last else f"{first}-{last}"
    return f"{minutes} {at.hour} {at.day} {at.month} *"


# -- the sweep -------------------------------------------------------------------------------------


def sweep_job(world: World) -> Callable[[Storage, float], Awaitable[int]]:
    """The job partition 0's coordinators run after their sweeps (``after_sweeps``), as the
    app's ``shared.api.triggers.start_scheduled_runs``."""

    async def job(storage: Storage, now: float) -> int:
        return await run_schedules(
            storage, now, partitions=world.partitions, signer=SIGNER, names=world.names
        )

    return job


# -- the users -------------------------------------------------------------------------------------


async def operation(world: World, name: str, kind: str, call: Call) -> None:
    """A user's schedule operation: create one, or pause, resume or delete one created before."""
    rng, book = world.rng, world.schedules
    if kind != "schedule_create" and book.lives:
        target = rng.choice(sorted(book.lives))
        world.platform.log(name, f"user: {kind} {target}")
        if kind == "schedule_delete":
            await call(world, name, lambda s: finish_and_delete(
                s, target, now=world.now() + rng.uniform(-1, 1), partitions=world.partitions,
                signer=SIGNER, names=world.names))  # fmt: skip
            return
        paused = kind == "schedule_pause"
        await call(world, name, lambda s: api_schedules.set_paused(
            s, target, paused, now=world.now() + rng.uniform(-1, 1)))  # fmt: skip
        return
    first = int((world.now() - vloop.EPOCH) // 60) + 1
    if first > LAST_MINUTE:
        return
    last = min(first + rng.randint(0, 2), LAST_MINUTE)
    schedule = f"s{len(book.lives) + 1}"
    spec = ScheduleSpec(
        name=schedule, cron=_cron(first, last),
        definition=json.dumps(definition(rng, f"sched-{schedule}")),
        concurrency=rng.choice(CONCURRENCY), catch_up=rng.choice((1, 2, 3)),
    )  # fmt: skip
    book.register(spec, [vloop.EPOCH + 60.0 * m for m in range(first, last + 1)])
    world.platform.log(name, f"user: schedule_create {schedule} {spec.cron!r} {spec.concurrency}")
    await call(world, name, lambda s: api_schedules.create(
        s, spec, now=world.now() + rng.uniform(-1, 1)))  # fmt: skip


# -- determinism and the planted bugs --------------------------------------------------------------


@contextlib.contextmanager
def seeded(rng: random.Random, teeth: frozenset[Tooth]) -> Iterator[None]:
    """For one run: the schedules' ETags and the sweep's incarnations from ``rng`` (the app draws
    incarnations from ``secrets``), and the schedule teeth planted."""
    with patching() as patch:
        _seed(rng, teeth, patch)
        yield


def _seed(rng: random.Random, teeth: frozenset[Tooth], patch: Patch) -> None:
    patch(memory_schedules, "_etags", itertools.count(1))
    patch(service, "new_incarnation", lambda: 1 + rng.randrange(MAX_COUNTER))
    if Tooth.SCHEDULE_IGNORE_PAUSE in teeth:
        listing = MemorySchedules.list

        async def unpaused(self: MemorySchedules) -> list[ScheduleRecord]:
            return [replace(r, paused=False) for r in await listing(self)]

        patch(MemorySchedules, "list", unpaused)
