"""The idle deployment is cheap and its cost tables say so truthfully: Flex Consumption bills at
least 1,000 ms per execution, so the sweep timer's schedule (shared/settings.py, the one source of
the default; main.bicep passes the same) decides most of the app's idle bill. The schedule stays
well inside the repairs' documented delays (docs/coordinator.md, "Sweeps") and dagq doctor's
alarms, so a slower timer costs no correctness."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from itertools import pairwise

from croniter import croniter

from shared.settings import Settings
from tests.infra.bicep_model import INFRA, REPO, deployment

FLEX_GB_S = 0.000026
"""Flex Consumption on-demand execution price, USD per GB-s (list, pay-as-you-go)."""
FLEX_MIN_BILLED_S = 1.0
"""Flex Consumption bills an execution at least 1,000 ms."""


def _default(field: str) -> float:
    value = Settings.model_fields[field].default
    assert isinstance(value, float)
    return value


def _sweep_interval_s() -> float:
    schedule = Settings.model_fields["sweep_schedule"].default
    start = datetime(2026, 1, 1, tzinfo=UTC)
    runs = croniter(schedule, start, second_at_beginning=True)
    times = [runs.get_next(datetime) for _ in range(100)]
    gaps = {(b - a).total_seconds() for a, b in pairwise(times)}
    assert len(gaps) == 1, f"uneven schedule {schedule}: {gaps}"
    return gaps.pop()


def test_the_sweep_timer_idles_cheaply_and_repairs_within_the_documented_delays() -> None:
    interval = _sweep_interval_s()
    main, _ = deployment()
    assert main.default("sweepSchedule") == Settings.model_fields["sweep_schedule"].default
    memory_gb = main.default("instanceMemoryMB") / 1024
    runs_per_day = 86_400 / interval
    per_day = runs_per_day * FLEX_MIN_BILLED_S * memory_gb * FLEX_GB_S
    assert per_day <= 0.20  # the 5 s timer billed ~$0.90 a day at 2 GB
    # Fast enough that a lost event, a lost activation and a lost dispatch are still repaired
    # about when the docs say, and doctor's "stuck event" alarm does not fire on a healthy app.
    assert interval <= _default("activate_repair_after_s")
    assert interval < _default("empty_queue_repair_after_s")
    assert interval < _default("event_stuck_after_s")
    assert interval * 2 < _default("sweep_overdue_after_s")


def test_the_idle_cost_table_does_the_arithmetic_of_the_defaults() -> None:
    interval = _sweep_interval_s()
    runs = round(86_400 / interval)
    text = (INFRA / "README.md").read_text()
    table = text[text.index("## Idle cost") : text.index("## Alerts")]
    [sweep_row] = [line for line in table.splitlines() if line.startswith("| Sweep timer")]
    assert f"86,400 / {interval:g} = {runs:,} runs" in sweep_row
    assert "1 s" in sweep_row  # the billed minimum, not the sweep's run time
    assert any(line.startswith("| App diagnostic logs") for line in table.splitlines())
    # Every idle-cost summary quotes the same total as the table.
    [total] = re.findall(r"\*\*~(\$[\d.]+-[\d.]+) a day", table)
    for doc in ("README.md", "docs/azure-gpu-quickstart.md", "docs/capacity.md"):
        assert total in (REPO / doc).read_text(), doc
