"""A period's cost report decodes a bounded number of tasks whatever the period holds: the newest
workflows first, within ``MAX_COST_TASKS``, and it says when it stopped short (issue 33: it read
up to 500 workflows with no bound on their tasks)."""

from __future__ import annotations

import pytest

from shared.cost.prices import PriceTable
from shared.ops import cost
from shared.storage.memory import memory_storage
from tests.coordinator.helpers import fan, submit


async def test_a_period_report_stays_within_its_task_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    storage = memory_storage("cost")
    for i in range(4):
        await submit(storage, fan(98), f"wf{i}", 1000.0 + i)  # 100 tasks each
    monkeypatch.setattr(cost, "MAX_COST_TASKS", 250)
    report = await cost.period_cost(
        storage, since=0.0, by="name", prices=PriceTable(), now=2000.0, limit=500
    )
    assert report.workflows == 2
    assert report.truncated
    assert report.partial is not None
    assert "250-task budget" in report.partial
    monkeypatch.setattr(cost, "MAX_COST_TASKS", 10_000)
    by_limit = await cost.period_cost(
        storage, since=0.0, by="name", prices=PriceTable(), now=2000.0, limit=3
    )
    assert (by_limit.workflows, by_limit.truncated, by_limit.partial) == (3, True, None)
