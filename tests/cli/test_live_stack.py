"""Watching long work end to end (issue 20): the real app and worker agents on Azurite.

A task prints for ~20 s and reports progress: its log is readable and growing through the API
before it ends, its progress reaches the task view and `dagq status`; it fails with exit 75, is
retried, and both attempts (exit codes, logs) stay readable through the API and the CLI.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import httpx

from shared.cli.exitcodes import ExitCode
from tests.support.stack import Result, Stack

Dagq = Callable[..., Result]

LONG = r"""
name: long-train
default_queue: cpu
tasks:
  - name: train
    num_retries: 1
    kwargs:
      cmd: |
        if [ "$DAGQ_ATTEMPT" = 1 ]; then
          for i in $(seq 1 20); do
            echo "epoch $i of 20"
            line="{\"progress\": $(( i * 5 ))e-2, \"epoch\": $i, \"loss\": 0.$(( 100 - i ))}"
            echo "$line" >> "$DAGQ_PROGRESS"
            sleep 1
          done
          echo "simulated network error" >&2
          exit 75
        fi
        echo "second attempt: done"
"""


def _wait(
    probe: Callable[[], bool],
    what: str,
    stack: Stack,
    timeout_s: float = 60,
    extra: Callable[[], str] = str,
) -> None:
    deadline = time.monotonic() + timeout_s
    while not probe():
        assert time.monotonic() < deadline, (
            f"{what} not seen in time\n{extra()}\n{stack.diagnostics()}"
        )
        time.sleep(0.5)


def test_a_long_task_is_watched_live_and_both_attempts_stay_readable(
    dagq: Dagq, stack: Stack
) -> None:
    path = stack.logs / "long.yaml"
    path.write_text(LONG)
    submitted = dagq("submit", str(path))
    assert submitted.code == ExitCode.OK, submitted.err
    workflow_id = submitted.out.splitlines()[0].strip()
    api = httpx.Client(base_url=stack.url.removesuffix("/api") + "/api", timeout=30)
    log_url = f"/workflows/{workflow_id}/tasks/train/log"

    sizes: list[int] = []
    answers: list[str] = []

    def grown() -> bool:
        answer = api.get(log_url, params={"attempt": 1})
        answers.append(f"{answer.status_code} {dict(answer.headers)} {answer.text[:300]}")
        if answer.status_code == 200 and answer.headers["x-dagq-log-growing"] == "true":
            sizes.append(len(answer.content))
        return len({s for s in sizes if s > 0}) >= 2

    _wait(grown, "a growing log", stack, extra=lambda: "\n".join(answers[-3:]))
    answer = api.get(log_url, params={"attempt": 1})
    assert answer.headers["x-dagq-attempt"] == "1"
    assert answer.text.startswith("epoch 1 of 20\n")
    offset = len(answer.content)
    more = api.get(log_url, params={"attempt": 1, "offset": offset})
    assert more.status_code == 200  # reads on from the offset (maybe nothing new yet)

    def progressed() -> bool:
        task = api.get(f"/workflows/{workflow_id}/tasks/train").json()
        return task["state"] == "running" and (task.get("progress") or 0) > 0

    _wait(progressed, "progress in the task view", stack)
    task = api.get(f"/workflows/{workflow_id}/tasks/train").json()
    assert 0 < task["progress"] < 1
    assert set(task["metrics"]) == {"epoch", "loss"}
    status = dagq("status", workflow_id)
    assert "epoch=" in status.out, status.out

    done = dagq("watch", workflow_id, "--timeout", "120")
    assert done.code == ExitCode.OK, done.err + stack.diagnostics()
    # Off a terminal too, watch says what the running task reports, and its ETA.
    assert re.search(
        r"\n  train: \d+% epoch=\d+ loss=[\d.]+, running \d+s, ETA \d+s\n", done.out
    ), done.out

    listing = api.get(f"/workflows/{workflow_id}/tasks/train/attempts").json()
    first, second = listing["items"]
    assert (first["attempt"], first["state"], first["exit_code"]) == (1, "failed", 75)
    assert "simulated network error" in first["error"]
    assert (second["attempt"], second["state"], second["exit_code"]) == (2, "completed", 0)
    first_log = api.get(log_url, params={"attempt": 1})
    assert first_log.headers["x-dagq-log-growing"] == "false"
    assert first_log.text.count("of 20\n") == 20
    assert "simulated network error" in first_log.text
    assert dagq("logs", workflow_id, "train").out == "second attempt: done\n"
    assert "epoch 20 of 20" in dagq("logs", workflow_id, "train", "--attempt", "1").out
    table = dagq("attempts", workflow_id, "train")
    assert table.code == 0
    assert "75" in table.out
    assert "completed" in table.out
    assert json.loads(dagq("attempts", workflow_id, "train", "--json").out)["items"][0]["kept"]
    missing = dagq("logs", workflow_id, "train", "--attempt", "3")
    assert missing.code == ExitCode.NOT_FOUND
    assert "no attempt 3" in missing.err


WAITS = """
name: waits
default_queue: cpu
tasks:
  - name: first
    kwargs:
      cmd: sleep 3
  - name: second
    depends_on: [first]
    kwargs:
      cmd: echo "second ran"
"""


def test_logs_follow_on_a_task_that_has_not_started_waits_for_it(dagq: Dagq, stack: Stack) -> None:
    # Before: `dagq logs -f` on a task still waiting for its parent exited 3 (no log yet).
    path = stack.logs / "waits.yaml"
    path.write_text(WAITS)
    submitted = dagq("submit", str(path), "--json")
    assert submitted.code == ExitCode.OK, submitted.err
    workflow_id = json.loads(submitted.out)["id"]
    followed = dagq("logs", workflow_id, "second", "-f")
    assert followed.code == ExitCode.OK, followed.err + stack.diagnostics()
    assert followed.out == "second ran\n"


NO_WORKER = """
name: nobody-serves
tasks:
  - name: waits
    queue: tpu
    kwargs:
      cmd: echo never
"""


def test_waiting_on_a_queue_no_worker_polls_is_said_once(dagq: Dagq, stack: Stack) -> None:
    # Before: `dagq submit --wait` printed "queued 1" until its timeout, silently.
    path = stack.logs / "nobody.yaml"
    path.write_text(NO_WORKER)
    waited = dagq("submit", str(path), "--wait", "--timeout", "25")
    assert waited.code == ExitCode.TIMEOUT, waited.out + waited.err
    assert waited.err.count("which no live worker polls") == 1, waited.err
    assert "`dagq-worker tpu`" in waited.err


def test_validate_and_submit_warn_of_a_queue_this_deployment_never_served(
    dagq: Dagq, stack: Stack
) -> None:
    # Before: a typo'd queue (`gpus`) was valid and submitted without a word; its task waited.
    path = stack.logs / "typo.yaml"
    path.write_text(NO_WORKER.replace("tpu", "gpus"))
    checked = dagq("validate", str(path))
    assert checked.code == ExitCode.OK, checked.err  # a warning, not a failure
    assert "no worker has ever polled queue 'gpus'" in checked.err, checked.err
    assert "queues served here: cpu, gpu" in checked.err
    submitted = dagq("submit", str(path), "--json")
    assert submitted.code == ExitCode.OK, submitted.err
    assert "no worker has ever polled queue 'gpus'" in submitted.err, submitted.err
    json.loads(submitted.out)  # stdout stays the JSON document alone
    dagq("cancel", json.loads(submitted.out)["id"])

    served = stack.logs / "served.yaml"
    served.write_text(NO_WORKER.replace("tpu", "cpu"))
    assert "ever polled" not in dagq("validate", str(served)).err
    # Without an API to ask (none answers), validate checks the definition alone, quietly.
    offline = dagq("validate", str(path), "--api-url", "http://127.0.0.1:9")
    assert (offline.code, offline.err) == (ExitCode.OK, "")
