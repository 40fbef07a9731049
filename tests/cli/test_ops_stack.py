"""The operations commands end to end: ``dagq workers``, ``dagq doctor``, ``dagq purge`` against
the real app (local host) and real worker agents on Azurite."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from shared.cli.exitcodes import ExitCode
from tests.cli.definitions import LONG
from tests.support.stack import EXAMPLES, Result, Stack

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
    # Both agents run on this one machine: one machine up, not priced (no VM size told).
    assert "machines up in the last 1d: (size not told) x1:" in table.out, table.out
    assert [p["machines"] for p in body["pool"]] == [1]


def test_purge_deletes_a_finished_workflow_and_refuses_a_running_one(
    dagq: Dagq, stack: Stack
) -> None:
    done = dagq("submit", str(EXAMPLES / "diamond.yaml"), "--wait", "--timeout", "90")
    assert done.code == ExitCode.OK, done.err + stack.diagnostics()
    finished = done.out.splitlines()[0].strip()
    running = dagq("submit", "-", stdin=LONG).out.splitlines()[0].strip()

    dry = dagq("purge", "--older-than", "0s", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert finished in [w["id"] for w in json.loads(dry.out)["workflows"]]
    assert running not in [w["id"] for w in json.loads(dry.out)["workflows"]]
    assert dagq("status", finished).code == ExitCode.OK  # a dry run deletes nothing

    refused = dagq("purge", running)
    assert refused.code == ExitCode.API_ERROR
    assert "cancel it first" in refused.err

    purged = dagq("purge", finished)
    assert purged.code == ExitCode.OK, purged.err
    assert f"purged {finished} (completed" in purged.out
    assert dagq("status", finished).code == ExitCode.NOT_FOUND
    assert finished not in dagq("list", "--all").out
    assert dagq("purge", finished).code == ExitCode.NOT_FOUND  # gone: unknown now

    dagq("cancel", running, "--wait", "--timeout", "60")
    bulk = dagq("purge", "--older-than", "0s", "--status", "cancelled")
    assert bulk.code == 0, bulk.err
    assert f"purged {running}" in bulk.out
    assert dagq("status", running).code == ExitCode.NOT_FOUND


def test_purge_usage_errors_exit_2(dagq: Dagq) -> None:
    assert dagq("purge").code == ExitCode.USAGE
    assert dagq("purge", "x", "--older-than", "1d").code == ExitCode.USAGE
    assert dagq("purge", "--older-than", "soon").code == ExitCode.USAGE
    assert dagq("purge", "--older-than", "1d", "--status", "running").code == ExitCode.USAGE


NOWHERE = """
name: nowhere
tasks:
  - name: lonely
    queue: nowhere
    kwargs:
      cmd: echo never
"""


def test_doctor_is_healthy_then_names_an_unserved_queue_and_its_fix(
    dagq: Dagq, stack: Stack
) -> None:
    def healthy() -> bool:
        return dagq("doctor", "--json").code == 0

    wait_until(healthy)
    text = dagq("doctor")
    assert "healthy: no problem found" in text.out

    workflow_id = dagq("submit", "-", stdin=NOWHERE).out.splitlines()[0].strip()

    def flagged() -> bool:  # once the coordinator dispatched the task
        report = json.loads(dagq("doctor", workflow_id, "--json").out)
        return "unserved_queue" in {f["check"] for f in report["findings"]}

    wait_until(flagged)
    report = json.loads(dagq("doctor", workflow_id, "--json").out)
    assert report["healthy"] is False
    assert report["workflow_id"] == workflow_id
    assert report["summary"]["workflow_status"] == "running"
    by_check = {f["check"]: f for f in report["findings"]}
    assert set(by_check) == {"unserved_queue", "unknown_queue"}
    assert by_check["unserved_queue"]["subject"] == "nowhere"
    assert "dagq-worker nowhere" in by_check["unserved_queue"]["fix"]
    shown = dagq("doctor", workflow_id)
    assert shown.code == 1
    assert "[unserved_queue]" in shown.out
    assert "fix: start a worker for it: dagq-worker nowhere" in shown.out

    assert dagq("doctor", "no-such-workflow").code == ExitCode.NOT_FOUND
    dagq("cancel", workflow_id, "--wait", "--timeout", "60")
    assert dagq("purge", workflow_id).code == ExitCode.OK
