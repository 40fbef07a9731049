"""The operations commands end to end: ``dagq workers``, ``dagq doctor``, ``dagq purge`` against
the real app (local host) and real worker agents on Azurite."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from tests.cli.conftest import Result, Stack

Dagq = Callable[..., Result]


def wait_until(probe: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not probe():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.2)


def test_workers_lists_the_running_agents(dagq: Dagq, stack: Stack) -> None:
    def both_registered() -> bool:
        body = json.loads(dagq("workers", "--json").out)
        return len(body["workers"]) == 2

    wait_until(both_registered)
    body = json.loads(dagq("workers", "--json").out)
    assert body["lost_after_s"] > 0
    by_queue = {tuple(w["queues"]): w for w in body["workers"]}
    assert set(by_queue) == {("cpu",), ("gpu",)}
    assert by_queue[("cpu",)]["slots"] == 2
    assert {w["status"] for w in body["workers"]} == {"alive"}
    table = dagq("workers")
    assert table.code == 0
    assert "alive" in table.out
    assert "cpu" in table.out
    assert "gpu" in table.out
