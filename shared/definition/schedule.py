"""Schedules: a workflow definition run on a cron schedule (``dagq schedule create``).

The checks of what a user gives (name, cron, time zone,
concurrency, catch-up: each problem names its field), and the slots: the times a cron expression
falls on in a time zone, as UTC timestamps. No I/O here: the API stores specs
(``shared.api.schedules``) and the sweep starts the runs of due slots
(``shared.api.schedule_sweep``).

Slots follow the cron expression in the schedule's time zone, with cron's usual rules for daylight
saving time: a local time that does not exist (spring forward) runs once, at the first minute that
does (the wall clock's jump); a local time that occurs twice (fall back) runs once, at its first
occurrence, when the expression names its hours (``0 2 * * *``); with ``*`` for the hour
(``*/15 * * * *``) every real minute the expression matches runs, both hours of the fall-back.

A slot's run has the id ``{name}-{slot}`` (``run_id``), the slot in UTC (``20261205T010000Z``), so
the id says which slot it is and a second start of the slot is the same idempotent submit.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

CONCURRENCY = ("allow", "forbid", "replace")
"""What a slot does while the previous run is active: start anyway, skip the slot, cancel it."""

SLOT_FORMAT = "%Y%m%dT%H%M%SZ"
"""A slot in a run id: UTC, basic ISO 8601 (16 characters)."""
MAX_SCHEDULE_NAME = 64 - 1 - 16
"""A name leaves room for ``-`` and the slot in a workflow id (at most 64 characters)."""
SCHEDULE_NAME_RE = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_SCHEDULE_NAME - 1}}}$")
MAX_CATCH_UP = 100
"""Most missed slots one schedule starts after downtime (``--catch-up``)."""
MAX_SCHEDULE_DEFINITION_BYTES = 480 * 1024
"""Largest workflow definition a schedule keeps (stored beside the schedule, in its table row)."""
MAX_SCHEDULE_PARAMS = 100
MAX_SCHEDULE_NOTIFY = 10
MAX_NOTIFY_URL_CHARS = 2048
MAX_PARAM_CHARS = 4096
KEPT_RUNS = 10
"""Run ids a schedule remembers (``schedule show``, the dashboard)."""
_TIMEZONE_RE = re.compile(r"^[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+){0,3}$")
_PARAM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def schedule_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a schedule (the prefix of its runs' ids), or None."""
    if not isinstance(name, str) or not SCHEDULE_NAME_RE.match(name) or ".." in name:
        shown = repr(name)[:80]
        return (
            f"invalid schedule name {shown}: use 1-{MAX_SCHEDULE_NAME} of A-Z a-z 0-9 _ . -"
            " starting with a letter or digit, without '..' (it starts its runs' workflow ids)"
        )
    return None


def cron_problem(cron: object) -> str | None:
    """Why ``cron`` is not a five-field cron expression dagq runs, or None."""
    from croniter import croniter

    if not isinstance(cron, str) or not cron.strip():
        return "cron: give five fields, minute hour day-of-month month day-of-week ('0 2 * * *')"
    fields = cron.split()
    if len(fields) != 5:
        return (
            f"cron {cron[:100]!r} has {len(fields)} fields: give five, minute hour day-of-month"
            " month day-of-week ('0 2 * * *' is every night at 02:00)"
        )
    try:
        croniter(cron, datetime(2026, 1, 1, tzinfo=UTC)).get_next(float)
    except Exception as exc:  # croniter's errors are of several kinds, all meaning "bad cron"
        return f"invalid cron {cron[:100]!r}: {exc}"
    return None


def timezone_problem(name: object) -> str | None:
    """Why ``name`` is not an IANA time zone (``Europe/Berlin``, ``UTC``), or None."""
    if not isinstance(name, str) or not _TIMEZONE_RE.match(name) or ".." in name:
        return f"unknown time zone {repr(name)[:80]}: use an IANA name such as Europe/Berlin"
    try:
        zone(name)
    except Exception:
        return f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC"
    return None


def spec_problems(
    *,
    name: str,
    cron: str,
    definition: str,
    timezone: str,
    params: dict[str, str],
    notify: list[str],
    concurrency: str,
    catch_up: int,
) -> list[str]:
    """Every problem of a schedule (``ScheduleSpec``'s fields) but its definition's (the
    compiler's), each naming its field."""
    problems = [
        p
        for p in (schedule_name_problem(name), cron_problem(cron), timezone_problem(timezone))
        if p
    ]
    if concurrency not in CONCURRENCY:
        problems.append(
            f"concurrency {str(concurrency)[:40]!r}: use one of {', '.join(CONCURRENCY)}"
        )
    if (
        isinstance(catch_up, bool)
        or not isinstance(catch_up, int)
        or not 1 <= catch_up <= MAX_CATCH_UP
    ):
        problems.append(f"catch_up {catch_up!r}: use a whole number from 1 to {MAX_CATCH_UP}")
    size = len(definition.encode("utf-8", errors="replace"))
    if size > MAX_SCHEDULE_DEFINITION_BYTES:
        problems.append(
            f"definition: {size} bytes; a schedule keeps at most {MAX_SCHEDULE_DEFINITION_BYTES}"
        )
    if len(params) > MAX_SCHEDULE_PARAMS:
        problems.append(f"params: {len(params)} given, at most {MAX_SCHEDULE_PARAMS}")
    for key, value in list(params.items())[:MAX_SCHEDULE_PARAMS]:
        if not _PARAM_NAME_RE.match(key):
            problems.append(f"param {key[:80]!r}: not a parameter name (letters, digits, _)")
        elif len(value) > MAX_PARAM_CHARS:
            problems.append(f"param {key}: its value is longer than {MAX_PARAM_CHARS} characters")
    if len(notify) > MAX_SCHEDULE_NOTIFY:
        problems.append(f"notify: {len(notify)} URLs, at most {MAX_SCHEDULE_NOTIFY}")
    for url in notify[:MAX_SCHEDULE_NOTIFY]:
        if not re.match(r"^https?://[^\s]+$", url) or len(url) > MAX_NOTIFY_URL_CHARS:
            problems.append(f"notify {url[:80]!r}: not an http(s) URL")
    return problems


# -- slots ---------------------------------------------------------------------------------------


def zone(name: str) -> ZoneInfo:
    """The time zone ``name`` (ZoneInfoNotFoundError, ValueError when there is none)."""
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def run_id(name: str, slot: float) -> str:
    """The workflow id of ``name``'s run of ``slot``: ``{name}-{UTC slot time}``."""
    return f"{name}-{datetime.fromtimestamp(slot, UTC).strftime(SLOT_FORMAT)}"


def slot_of_run(name: str, workflow_id: str) -> float | None:
    """The slot a run id of ``name`` names (``run_id``'s inverse), or None."""
    head, _, stamp = workflow_id.rpartition("-")
    if head != name:
        return None
    try:
        return datetime.strptime(stamp, SLOT_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _hours_named(cron: str) -> bool:
    return cron.split()[1] != "*"


def _kept(cron: str, tz: ZoneInfo, slot: float) -> bool:
    """False for the second occurrence of a local time in a fall-back hour when the expression
    names its hours (cron runs such a job once)."""
    local = datetime.fromtimestamp(slot, tz)
    return not (local.fold == 1 and _hours_named(cron) and _repeated(local, tz))


def _repeated(local: datetime, tz: ZoneInfo) -> bool:
    """Whether ``local``'s wall time also occurred an hour or less earlier (fall back)."""
    earlier = local.replace(fold=0)
    return earlier.utcoffset() != local.utcoffset()


DST_MARGIN_S = 3 * 3600.0
"""How far before croniter's backward estimate the forward walk starts: croniter walking back
through a fall-back hour may land an hour off (a slot of the repeated hour taken at its first
occurrence), never more than a transition's shift."""
MAX_WIDENINGS = 12


def due_slots(cron: str, timezone: str, *, after: float, now: float, limit: int) -> list[float]:
    """The latest ``limit`` slots in ``(after, now]``, oldest first, as UTC timestamps (whole
    seconds). A long downtime costs about ``limit`` steps, not one per missed slot: croniter's
    backward walk estimates where the latest ``limit`` slots begin, and the slots are then taken
    walking forward from a little before it (the forward walk is right across daylight saving
    time; the backward one is not always), widening the window until it holds ``limit`` slots or
    reaches ``after``."""
    from croniter import croniter

    if limit <= 0 or now <= after:
        return []
    tz = zone(timezone)
    back = croniter(cron, datetime.fromtimestamp(now, tz) + timedelta(seconds=1))
    earliest = now
    for _ in range(limit):
        earliest = min(earliest, float(back.get_prev(float)))
    span = now - earliest + DST_MARGIN_S
    found: list[float] = []
    for _ in range(MAX_WIDENINGS):
        start = max(after, now - span)
        found = _forward(cron, tz, start, now)
        if len(found) >= limit or start <= after:
            break
        span *= 4
    return found[-limit:]


def _forward(cron: str, tz: ZoneInfo, start: float, end: float) -> list[float]:
    """Every kept slot in ``(start, end]``, oldest first."""
    from croniter import croniter

    it = croniter(cron, datetime.fromtimestamp(start, tz))
    found: list[float] = []
    while True:
        slot = float(it.get_next(float))
        if slot > end:
            return found
        if slot > start and _kept(cron, tz, slot) and (not found or slot > found[-1]):
            found.append(slot)


def next_slots(cron: str, timezone: str, *, after: float, count: int = 1) -> list[float]:
    """The first ``count`` slots after ``after``, oldest first."""
    from croniter import croniter

    tz = zone(timezone)
    it = croniter(cron, datetime.fromtimestamp(after, tz))
    found: list[float] = []
    for _ in range(count * 4 + 4):  # a skipped fall-back slot now and then
        slot = float(it.get_next(float))
        if slot > after and _kept(cron, tz, slot) and (not found or slot > found[-1]):
            found.append(slot)
        if len(found) == count:
            break
    return found
