"""Result caching end to end: the real app (local host, coordinator on the queue trigger) and real
worker agents on Azurite, driven through the CLI. A workflow whose ``cache: true`` tasks ran once
runs again without dispatching them (no worker runs them: their results name the run that made
them), with identical downstream outputs and ``cached_from`` in the task view; changing an
upstream output's content, or the cache version, runs them again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from shared.cli.exitcodes import ExitCode
from tests.support.stack import Result, Stack

Dagq = Callable[..., Result]

# train's output names the workflow that ran it (and is over 4 KiB: a blob output), so a reused
# result is told from a recomputed one; evaluate's output is derived from train's.
PIPELINE = """
name: cached
default_queue: cpu
tasks:
  - name: prep
    kwargs:
      cmd: |
        echo '{"data": "DATA"}' > "$DAGQ_OUTPUT"
  - name: train
    depends_on: [prep]
    cache: CACHE
    kwargs:
      cmd: >-
        python3 -c 'import json, os; json.dump({"ran_in": os.environ["DAGQ_WORKFLOW_ID"],
        "pad": "x" * 6000}, open(os.environ["DAGQ_OUTPUT"], "w"))'
  - name: evaluate
    depends_on: [train]
    cache: true
    kwargs:
      cmd: >-
        python3 -c 'import json, os; up = json.load(open(os.environ["DAGQ_UPSTREAM"]));
        json.dump({"score": up["train"]["ran_in"]}, open(os.environ["DAGQ_OUTPUT"], "w"))'
"""


def submit(dagq: Dagq, stack: Stack, data: str = "one", cache: str = "true") -> dict[str, object]:
    text = PIPELINE.replace("DATA", data).replace("CACHE", cache)
    done = dagq("submit", "-", "--wait", "--timeout", "120", "--json", stdin=text)
    assert done.code == ExitCode.OK, done.out + done.err + stack.diagnostics()
    view: dict[str, object] = json.loads(done.out)
    return view


def task(dagq: Dagq, workflow_id: str, name: str) -> dict[str, object]:
    shown = dagq("status", workflow_id, "--json")
    assert shown.code == ExitCode.OK, shown.err
    detail: dict[str, object] = json.loads(shown.out)["tasks"][name]
    return detail


def output_of(dagq: Dagq, workflow_id: str, name: str) -> object:
    shown = dagq("outputs", workflow_id, name, "--json")
    assert shown.code == ExitCode.OK, shown.err
    return json.loads(shown.out)


def test_a_second_run_reuses_cached_tasks_and_a_change_runs_them(dagq: Dagq, stack: Stack) -> None:
    first = submit(dagq, stack)
    one = str(first["id"])
    second = submit(dagq, stack)
    two = str(second["id"])
    for name in ("train", "evaluate"):
        detail = task(dagq, two, name)
        assert detail["state"] == "completed"
        assert detail["cached_from"] == {
            "workflow_id": one, "task": name, "attempt": 1,
            "run_s": detail["cached_from"]["run_s"],  # type: ignore[index]
        }  # fmt: skip
        assert detail.get("worker") is None  # no worker ran it
    assert task(dagq, two, "prep").get("cached_from") is None
    # Identical outputs downstream: train's blob (made by run one), evaluate's value.
    assert output_of(dagq, two, "train") == output_of(dagq, one, "train")
    assert output_of(dagq, two, "evaluate") == {"score": one}
    status = dagq("status", two)
    assert "cached" in status.out, status.out
    assert f"from {one}" in status.out, status.out
    # A different upstream output: train runs again (evaluate too: train's output changed).
    changed = str(submit(dagq, stack, data="two")["id"])
    assert task(dagq, changed, "train").get("cached_from") is None
    assert output_of(dagq, changed, "evaluate") == {"score": changed}
    # A new cache version of train: it runs again, though its inputs are the same as run one's.
    bumped = str(submit(dagq, stack, cache="{version: '2'}")["id"])
    assert task(dagq, bumped, "train").get("cached_from") is None
    # --no-cache runs everything; --refresh train recomputes train and replaces its entry.
    fresh = dagq("submit", "-", "--wait", "--json", "--no-cache",
                 stdin=PIPELINE.replace("DATA", "one").replace("CACHE", "true"))  # fmt: skip
    assert fresh.code == ExitCode.OK, fresh.err
    assert task(dagq, json.loads(fresh.out)["id"], "evaluate").get("cached_from") is None


def test_cost_of_a_run_and_of_a_period(dagq: Dagq, stack: Stack) -> None:
    first = str(submit(dagq, stack, data="cost")["id"])
    second = str(submit(dagq, stack, data="cost")["id"])
    shown = dagq("cost", first)
    assert shown.code == ExitCode.OK, shown.err
    for words in ("GPU-hours", "CPU-hours", "estimated cost", "train", "evaluate"):
        assert words in shown.out, shown.out
    reused = json.loads(dagq("cost", second, "--json").out)
    by_name = {t["name"]: t for t in reused["tasks"]}
    assert by_name["train"]["attempts"] == 0
    assert by_name["train"]["cached_from"]["workflow_id"] == first
    assert reused["cached_saved_hours"] > 0
    assert reused["storage_requests"] > 0
    period = dagq("cost", "--since", "1d", "--by", "name", "--json")
    assert period.code == ExitCode.OK, period.err
    report = json.loads(period.out)
    assert report["workflows"] >= 2
    assert [g["key"] for g in report["groups"]] == ["cached"]
    # The stack's worker machine, up since its agent started (a dev box: no VM size told). Its
    # agents note it at their first heartbeat, which may come after these runs ended.
    deadline = time.monotonic() + 60
    while not report["pool"] and time.monotonic() < deadline:
        time.sleep(0.5)
        report = json.loads(dagq("cost", "--since", "1d", "--by", "name", "--json").out)
    [machine] = report["pool"]
    assert (machine["vm_size"], machine["machines"], machine["estimated_cost"]) == ("", 1, None)
    assert 0 < machine["vm_hours"] == report["pool_vm_hours"] < 1
    text = dagq("cost", "--since", "1d")
    assert "pool (size not told): 1 machine(s) VM-hours" in " ".join(text.out.split()), text.out
    assert dagq("cost").code == ExitCode.USAGE  # neither an id nor --since
