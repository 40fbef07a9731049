"""The dagq CLI end to end: the real app (local host) and real worker agents on Azurite."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from shared.cli.exitcodes import ExitCode
from shared.cli.follow import follow
from shared.client import Client
from tests.cli.definitions import LONG
from tests.support.stack import EXAMPLES, Result, Stack

Dagq = Callable[..., Result]


def _id(result: Result) -> str:
    return result.out.splitlines()[0].strip()


def test_submit_wait_completes_and_exposes_status_outputs_logs(dagq: Dagq, stack: Stack) -> None:
    done = dagq("submit", str(EXAMPLES / "diamond.yaml"), "--wait", "--timeout", "90")
    assert done.code == ExitCode.OK, done.err + stack.diagnostics()
    workflow_id = _id(done)
    assert f"workflow {workflow_id} completed" in done.out

    status = dagq("status", workflow_id, "--json")
    assert status.code == 0
    body = json.loads(status.out)
    assert body["id"] == workflow_id
    assert body["name"] == "diamond"
    assert body["status"] == "completed"
    assert {state: n for state, n in body["counts"].items() if n} == {"completed": 4}
    assert set(body["tasks"]) == {"split", "left", "right", "join"}
    assert {"state", "attempt", "queue", "started_at", "finished_at", "exit_code"} <= set(
        body["tasks"]["join"]
    )

    table = dagq("status", workflow_id)
    assert "diamond" in table.out
    assert "join" in table.out

    one = dagq("outputs", workflow_id, "join", "--json")
    assert json.loads(one.out) == {"value": 61}  # (20 + 1) + (20 * 2)
    every = json.loads(dagq("outputs", workflow_id, "--json").out)
    assert every == {"split": {"value": 20}, "left": {"value": 21}, "right": {"value": 40},
                     "join": {"value": 61}}  # fmt: skip

    log = dagq("logs", workflow_id, "join")
    assert log.code == 0
    assert "left + right = 61" in log.out
    assert json.loads(dagq("logs", workflow_id, "join", "--json").out)["task"] == "join"


def test_failed_workflow_exits_1_and_retry_reruns_from_the_failure(
    dagq: Dagq, stack: Stack
) -> None:
    failed = dagq("submit", str(EXAMPLES / "rerun.yaml"), "--wait", "--timeout", "90")
    assert failed.code == ExitCode.FAILED, failed.err + stack.diagnostics()
    workflow_id = _id(failed)
    assert "failed: convert" in failed.out
    assert f"dagq retry {workflow_id}" in failed.out
    tasks = json.loads(dagq("status", workflow_id, "--json").out)["tasks"]
    assert tasks["convert"]["state"] == "failed"
    assert tasks["report"]["state"] == "upstream_failed"
    assert "input not ready" in dagq("logs", workflow_id, "convert").out

    rerun = dagq("retry", workflow_id, "--wait", "--timeout", "90")
    assert rerun.code == ExitCode.OK, rerun.err + stack.diagnostics()
    after = json.loads(dagq("status", workflow_id, "--json").out)
    assert after["status"] == "completed"
    assert after["run"] == 2
    assert after["tasks"]["fetch"]["attempt"] == 1  # completed in run 1: kept, not rerun
    assert after["tasks"]["convert"]["attempt"] == 2

    again = dagq("retry", workflow_id)
    assert again.code == ExitCode.API_ERROR  # 409: a completed workflow has nothing to rerun
    assert "nothing to rerun" in again.err


def test_cancel_stops_a_running_workflow(dagq: Dagq, stack: Stack) -> None:
    submitted = dagq("submit", "-", stdin=LONG)
    assert submitted.code == 0, submitted.err
    workflow_id = _id(submitted)
    with Client(stack.url) as client:
        deadline = time.monotonic() + 60
        while client.get(workflow_id).tasks["sleeper"].state not in ("queued", "running"):
            assert time.monotonic() < deadline, stack.diagnostics()
            time.sleep(0.3)
    gave_up = dagq("watch", workflow_id, "--timeout", "1", "--interval", "0.2")
    assert gave_up.code == ExitCode.TIMEOUT
    assert "still running" in gave_up.err or "still pending" in gave_up.err
    cancelled = dagq("cancel", workflow_id, "--wait", "--timeout", "60", "--reason", "test")
    assert cancelled.code == ExitCode.CANCELLED, cancelled.err + stack.diagnostics()
    assert "cancel requested" in cancelled.out
    final = json.loads(dagq("status", workflow_id, "--json").out)
    assert final["status"] == "cancelled"
    assert final["tasks"]["after"]["state"] == "cancelled"

    # Cancelling again is harmless, and watch on a cancelled workflow reports it.
    assert dagq("cancel", workflow_id).code == 0
    assert dagq("watch", workflow_id).code == ExitCode.CANCELLED


def test_ctrl_c_stops_following_not_the_workflow(stack: Stack, tmp_path: Path) -> None:
    flow = tmp_path / "long.yaml"
    flow.write_text(LONG)
    env = {**os.environ, "DAGQ_API_URL": stack.url, "DAGQ_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    process = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "submit", str(flow), "--wait"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    workflow_id = process.stdout.readline().strip()
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert f"dagq watch {workflow_id}" in err
    assert "Traceback" not in err
    with Client(stack.url) as client:
        assert not client.get(workflow_id).is_terminal  # the workflow kept running
        client.cancel(workflow_id)


def test_flaky_task_succeeds_on_retry(dagq: Dagq, stack: Stack) -> None:
    done = dagq("submit", str(EXAMPLES / "flaky.yaml"), "--wait", "--json", "--timeout", "90")
    assert done.code == ExitCode.OK, done.err + stack.diagnostics()
    body = json.loads(done.out)
    assert body["status"] == "completed"
    assert body["tasks"]["download"]["attempt"] == 2


def test_list_pages_and_filters(dagq: Dagq) -> None:
    ids = [_id(dagq("submit", str(EXAMPLES / "ai4s-jobq.yaml"))) for _ in range(3)]
    listed = json.loads(dagq("list", "--json", "--limit", "50").out)
    listed_ids = [item["id"] for item in listed["items"]]
    assert set(ids) <= set(listed_ids)
    assert {"id", "name", "status", "created_at", "counts"} <= set(listed["items"][0])

    first = json.loads(dagq("list", "--json", "--limit", "2").out)
    assert len(first["items"]) == 2
    assert first["next"]
    second = json.loads(dagq("list", "--json", "--limit", "2", "--next", first["next"]).out)
    assert not {i["id"] for i in first["items"]} & {i["id"] for i in second["items"]}
    every = json.loads(dagq("list", "--json", "--limit", "2", "--all").out)
    assert set(ids) <= {item["id"] for item in every["items"]}
    assert every["next"] is None

    by_name = json.loads(dagq("list", "--json", "--name", "jobq-").out)
    assert {item["name"] for item in by_name["items"]} == {"jobq-etl"}
    table = dagq("list")
    assert ids[0] in table.out

    # The plain ai4s-jobq file runs unchanged.
    finished = dagq("watch", ids[0], "--timeout", "90")
    assert finished.code == ExitCode.OK, finished.err


def test_idempotent_submit_and_conflict(dagq: Dagq, tmp_path: object) -> None:
    diamond = str(EXAMPLES / "diamond.yaml")
    first = dagq("submit", diamond, "--id", "cli-idem-1")
    assert (first.code, _id(first)) == (0, "cli-idem-1")
    second = dagq("submit", diamond, "--id", "cli-idem-1")
    assert (second.code, _id(second)) == (0, "cli-idem-1")
    assert "already exists" in second.err
    other = dagq("submit", str(EXAMPLES / "flaky.yaml"), "--id", "cli-idem-1")
    assert other.code == ExitCode.API_ERROR
    assert "different definition" in other.err


def test_health(dagq: Dagq) -> None:
    report = dagq("health", "--json")
    assert report.code == 0, report.err
    body = json.loads(report.out)
    assert body["status"] == "ok"
    assert {"coordinator", "event_queue", "poison_queue"} <= set(body)
    text = dagq("health")
    assert "storage: reachable" in text.out
    assert "poison queue" in text.out


def test_errors_map_to_documented_exit_codes(dagq: Dagq) -> None:
    missing = dagq("status", "no-such-workflow")
    assert missing.code == ExitCode.NOT_FOUND
    assert "not found" in missing.err
    assert "Traceback" not in missing.err

    bad = (
        "name: bad\ntasks:\n"
        "  - {name: a, depends_on: [zzz], kwargs: {cmd: 'true'}}\n"
        "  - {name: b, dep_policy: 3, depends_on: [a], kwargs: {cmd: 'true'}}\n"
    )
    invalid = dagq("submit", "-", stdin=bad)
    assert invalid.code == ExitCode.USAGE
    assert "zzz" in invalid.err  # every problem is listed, with where it is
    assert "tasks.b.dep_policy" in invalid.err

    assert dagq("submit", "/nonexistent/flow.yaml").code == ExitCode.USAGE
    assert dagq("status").code == ExitCode.USAGE  # argparse: missing ID
    unreachable = dagq("list", "--api-url", "http://127.0.0.1:9")
    assert unreachable.code == ExitCode.API_ERROR
    assert "cannot reach" in unreachable.err


def test_watch_renders_the_live_view(stack: Stack) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=110, color_system=None)
    with Client(stack.url) as client:
        submitted = client.submit_file(EXAMPLES / "diamond.yaml")
        final = follow(client, submitted.id, console=console, interval_s=0.3, timeout_s=120)
    assert final.status == "completed", stack.diagnostics()
    text = screen.getvalue()
    for expected in ("diamond", submitted.id, "completed", "4/4 tasks finished", "queue", "cpu",
                     "waiting", "running", "elapsed"):  # fmt: skip
        assert expected in text, expected
