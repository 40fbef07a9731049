"""Slots of a schedule (shared.definition.schedule): catch-up bound, no duplicate slot, daylight
saving time in a time zone, and the checks of what a user gives."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.definition.schedule import (
    cron_problem,
    due_slots,
    next_slots,
    run_id,
    schedule_name_problem,
    slot_of_run,
    timezone_problem,
)

CRONS = ["* * * * *", "*/7 * * * *", "0 2 * * *", "30 2 * * *", "*/20 2 * * *", "0 * * * *",
         "15 1,2,3 * * 0", "0 0 1 * *", "45 23 * * 1-5", "0 2,3 * * *"]  # fmt: skip
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
# Around the 2026 transitions of Europe/Berlin and America/New_York.
BASES = [datetime(2026, 3, 7, tzinfo=UTC), datetime(2026, 3, 28, tzinfo=UTC),
         datetime(2026, 10, 24, tzinfo=UTC), datetime(2026, 10, 31, tzinfo=UTC),
         datetime(2026, 4, 4, tzinfo=UTC)]  # fmt: skip


def _forward(cron: str, tz: str, after: float, now: float) -> list[float]:
    """Every slot in (after, now], walking forward (the reference)."""
    found: list[float] = []
    t = after
    while True:
        [slot] = next_slots(cron, tz, after=t)
        if slot > now:
            return found
        found.append(slot)
        t = slot


@settings(max_examples=150, deadline=None)
@given(
    cron=st.sampled_from(CRONS),
    tz=st.sampled_from(ZONES),
    base=st.sampled_from(BASES),
    start_min=st.integers(0, 3 * 24 * 60),
    span_min=st.integers(0, 36 * 60),
    limit=st.integers(0, 6),
)
def test_due_slots_are_the_latest_of_the_real_slots_bounded_and_unique(
    cron: str, tz: str, base: datetime, start_min: int, span_min: int, limit: int
) -> None:
    after = base.timestamp() + start_min * 60 + 17.5
    now = after + span_min * 60
    got = due_slots(cron, tz, after=after, now=now, limit=limit)
    assert len(got) <= limit  # the catch-up bound
    assert got == sorted(set(got))  # no duplicate slot, oldest first
    assert all(after < s <= now for s in got)
    every = _forward(cron, tz, after, now)
    assert got == (every[-limit:] if limit else [])
    assert len({run_id("n", s) for s in every}) == len(every)  # one id per slot


def _berlin(day: str) -> list[str]:
    after = datetime.fromisoformat(day + "T00:00:00+00:00").timestamp() - 86400
    now = after + 2 * 86400
    slots = due_slots("30 2 * * *", "Europe/Berlin", after=after, now=now, limit=10)
    return [datetime.fromtimestamp(s, UTC).strftime("%m-%d %H:%M") for s in slots]


def test_a_nightly_slot_runs_once_on_both_daylight_saving_days() -> None:
    # Spring forward: 02:30 does not exist on 29 March, it runs at 03:00 CEST (01:00 UTC).
    assert _berlin("2026-03-29") == ["03-28 01:30", "03-29 01:00"]
    # Fall back: 02:30 happens twice on 25 October, it runs once (the first, 00:30 UTC).
    assert _berlin("2026-10-25") == ["10-24 00:30", "10-25 00:30"]


def test_an_every_hour_schedule_runs_both_hours_of_the_fall_back() -> None:
    after = datetime(2026, 10, 24, 23, 30, tzinfo=UTC).timestamp()
    slots = due_slots("0 * * * *", "Europe/Berlin", after=after, now=after + 3 * 3600, limit=10)
    assert [datetime.fromtimestamp(s, UTC).hour for s in slots] == [0, 1, 2]


def test_the_latest_slot_in_the_second_of_two_repeated_hours() -> None:
    # New York falls back at 02:00 EDT on 1 November 2026: 01:00-01:59 happens twice. At 01:00:17
    # EST (06:00:17 UTC) the latest every-minute slot is 06:00 UTC, not the first 01:00 (05:00 UTC)
    # where croniter's backward walk lands (hypothesis found it).
    now = datetime(2026, 11, 1, 6, 0, 17, tzinfo=UTC).timestamp()
    [slot] = due_slots("* * * * *", "America/New_York", after=now - 86400, now=now, limit=1)
    assert slot == datetime(2026, 11, 1, 6, 0, tzinfo=UTC).timestamp()
    hourly = due_slots("0 * * * *", "America/New_York", after=now - 3 * 3600, now=now, limit=5)
    assert [datetime.fromtimestamp(s, UTC).hour for s in hourly] == [4, 5, 6]


def test_a_long_downtime_starts_only_the_latest_slots() -> None:
    after = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    now = after + 90 * 86400 + 30  # three months of every minute
    slots = due_slots("* * * * *", "UTC", after=after, now=now, limit=1)
    assert slots == [after + 90 * 86400]


def test_run_ids_name_their_slot() -> None:
    slot = datetime(2026, 12, 5, 1, 0, tzinfo=UTC).timestamp()
    assert run_id("nightly", slot) == "nightly-20261205T010000Z"
    assert slot_of_run("nightly", "nightly-20261205T010000Z") == slot
    assert slot_of_run("other", "nightly-20261205T010000Z") is None
    assert len(run_id("n" * 47, slot)) == 64


def test_bad_input_is_named() -> None:
    assert schedule_name_problem("nightly-eval.v2") is None
    for bad in ("", "-x", "a/b", "a..b", "n" * 48, "a b"):
        assert "invalid schedule name" in (schedule_name_problem(bad) or "")
    assert cron_problem("0 2 * * *") is None
    assert "has 6 fields" in (cron_problem("0 0 2 * * *") or "")
    assert "invalid cron" in (cron_problem("61 2 * * *") or "")
    assert "invalid cron" in (cron_problem("a b c d e") or "")
    assert timezone_problem("Europe/Berlin") is None
    for bad in ("Mars/Olympus", "../../etc/passwd", "/etc/localtime", "Europe/"):
        assert "unknown time zone" in (timezone_problem(bad) or "")
