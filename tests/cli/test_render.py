"""The CLI's views render the information they promise (pure: no API involved)."""

from __future__ import annotations

from rich.console import Console

from shared.cli import live_render, render, style
from shared.cli.exitcodes import ExitCode, for_status
from shared.cli.follow import PaceMeter
from shared.cli.queries import health_lines
from shared.client import Workflow
from tests.support.fake_api import task_body, workflow_body


def _workflow(counts: dict[str, int], status: str = "running", **extra: object) -> Workflow:
    tasks = {}
    n = 0
    for state, count in counts.items():
        for _ in range(count):
            queue = "gpu" if n % 2 else "cpu"
            tasks[f"t{n}"] = task_body(state=state, attempt=1, queue=queue)
            n += 1
    body = workflow_body(id="wf-1", status=status, total=n, counts=counts, tasks=tasks)
    return Workflow.model_validate(body | extra)


def _text(renderable: object) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_live_view_shows_states_queues_rate_and_eta() -> None:
    meter = PaceMeter(window_s=60)
    meter.observe(_workflow({"completed": 2, "running": 2, "pending": 6}), now=0.0, wall=1010.0)
    wf = _workflow({"completed": 6, "running": 2, "pending": 2})
    pace = meter.observe(wf, now=2.0, wall=1012.0)
    assert pace.rate == 2.0  # 4 more tasks finished in 2 s
    assert pace.eta_s == 2.0  # 4 left at 2/s
    assert pace.elapsed_s == 12.0
    text = _text(render.live_view(wf, pace))
    for expected in (
        "demo",
        "wf-1",
        "running",
        "6/10 tasks finished",
        "2.0 tasks/s",
        "ETA 2s",
        "elapsed 12s",
        "completed",
        "pending",
        "cpu",
        "gpu",
        "queue",
        "waiting",
    ):
        assert expected in text, expected


def test_pace_restarts_when_a_rerun_reopens_tasks() -> None:
    meter = PaceMeter()
    meter.observe(_workflow({"completed": 8, "failed": 2}, "failed"), now=0.0, wall=0.0)
    pace = meter.observe(_workflow({"completed": 8, "pending": 2}), now=1.0, wall=1.0)
    assert pace.rate is None


def test_status_view_lists_failed_tasks_first_when_truncated() -> None:
    counts = {"completed": 60, "failed": 1}
    wf = _workflow(counts, "failed")
    text = _text(render.status_view(wf, limit=10))
    assert "t60" in text  # the failed task made the cut
    assert "51 more tasks" in text


def test_plain_progress_is_one_line() -> None:
    wf = _workflow({"completed": 3, "queued": 1})
    line = render.plain_progress(wf, render.Pace(elapsed_s=65, rate=None, eta_s=None))
    assert line == "wf-1 running: 3/4 finished (completed 3, queued 1); elapsed 1m05s"


def test_exit_codes_for_terminal_states() -> None:
    assert for_status("completed") == ExitCode.OK == 0
    assert for_status("failed") == ExitCode.FAILED == 1
    assert for_status("cancelled") == ExitCode.CANCELLED
    assert len({int(code) for code in ExitCode}) == len(ExitCode)


def test_every_state_has_a_place_and_a_style() -> None:
    from shared.states import TaskState, WorkflowStatus

    assert sorted(render.STATE_ORDER) == sorted(TaskState)
    assert set(style.STATE_STYLE) == set(TaskState)
    assert set(render.STATUS_STYLE) == set(WorkflowStatus)
    assert {s: for_status(s) for s in WorkflowStatus if s.is_terminal} == {
        WorkflowStatus.COMPLETED: ExitCode.OK,
        WorkflowStatus.FAILED: ExitCode.FAILED,
        WorkflowStatus.CANCELLED: ExitCode.CANCELLED,
    }


def _health(partitions: int) -> dict[str, object]:
    parts = [
        {
            "partition": p,
            "event_queue": {"name": f"x-events-{p}", "depth": 10 + p},
            "poison_queue": {"name": f"x-events-{p}-poison", "depth": p},
            "lease_held": p != 1,
        }
        for p in range(partitions)
    ]
    return {
        "status": "ok",
        "storage": "reachable",
        "coordinator": {"lease_held": True},
        "event_queue": parts[0]["event_queue"],
        "poison_queue": parts[0]["poison_queue"],
        "partitions": parts,
    }


def test_health_shows_each_partition_when_there_are_several() -> None:
    lines = health_lines(_health(3), "http://127.0.0.1:1/api")
    assert "  event queue x-events-0: 10 messages" in lines
    assert "  partitions (3):" in lines
    assert "    1: lease free, events 11 (x-events-1), poison 1 (x-events-1-poison)" in lines
    assert "    2: lease held, events 12 (x-events-2), poison 2 (x-events-2-poison)" in lines


def test_health_of_one_partition_has_no_partition_list() -> None:
    lines = health_lines(_health(1), "http://127.0.0.1:1/api")
    assert "  coordinator lease: held" in lines
    assert not [line for line in lines if "partition" in line]


def test_money_has_one_precision_everywhere() -> None:
    """``dagq cost`` shows every amount with the same decimals: not ``0.00 USD`` beside
    ``0.0001 USD``, nor ``3.85 USD`` beside ``0.0112 USD``."""
    import re

    from shared.cli.cost_render import render as cost_render
    from shared.views import WorkflowCost

    cost = WorkflowCost.model_validate(
        {
            "id": "wf-1",
            "name": "n",
            "currency": "USD",
            "gpu_hours": 1.0,
            "cpu_hours": 0.0,
            "queue_wait_hours": 0.0,
            "compute_cost": 3.85,
            "storage_requests": 10.0,
            "storage_cost": 0.0001,
            "estimated_cost": 3.8501,
            "cached_saved_hours": 0.0,
            "cached_saved_cost": 0.0,
            "tasks": [],
        }
    )
    amounts = re.findall(r"(\d+\.\d+) USD", _text(cost_render(cost)))
    assert len(amounts) == 4, amounts
    assert {len(a.split(".")[1]) for a in amounts} == {4}, amounts


def test_a_running_task_shows_how_long_it_has_been_running() -> None:
    """The task table's ``took`` of a running task is the time so far (``running 3m00s``), not
    ``-``; a finished task's is its run time; a task that never started has none."""
    import time

    started = time.time() - 180
    wf = Workflow.model_validate(
        workflow_body(
            id="wf-1",
            status="running",
            total=3,
            counts={"running": 1, "completed": 1},
            tasks={
                "train": task_body(state="running", attempt=1, started_at=started),
                "prep": task_body(
                    state="completed", attempt=1, started_at=started - 100, finished_at=started - 27
                ),
                "publish": task_body(state="pending"),
            },
        )
    )
    lines = _text(render.status_view(wf)).splitlines()
    row = {line.split()[0]: line for line in lines if line.split()[:1] in (["train"], ["prep"])}
    assert "running 3m" in row["train"], row
    assert "1m13s" in row["prep"], row


def test_a_wait_failure_summary_is_never_cut_off_a_terminal() -> None:
    """Off a terminal (CI logs, pipes) the failure summary of ``--wait`` keeps each failed task's
    error whole, on one line, however long: it is what the user acts on (a path to fix)."""
    import io

    from shared.cli.follow import conclude
    from shared.cli.terminal import SafeConsole

    path = "/mnt/data/" + "/".join(f"partition-{i:03d}" for i in range(12)) + "/features.parquet"
    error = f"Traceback (most recent call last):\n  ...\nFileNotFoundError: no such file: {path}"
    name = "preprocess-" + "x" * 70
    wf = Workflow.model_validate(
        workflow_body(
            id="wf-1",
            status="failed",
            total=1,
            counts={"failed": 1},
            finished_at=2.0,
            tasks={
                name: task_body(
                    state="failed",
                    attempt=1,
                    started_at=1.0,
                    finished_at=2.0,
                    error=error,
                    exit_code=1,
                )
            },
        )
    )
    out = io.StringIO()
    conclude(wf, SafeConsole(file=out, width=80))
    text = out.getvalue()
    assert f"failed: {name}  FileNotFoundError: no such file: {path}\n" in text, text
    assert "…" not in text


def test_watch_shows_running_tasks_progress_metrics_and_eta() -> None:
    """``dagq watch`` lists running tasks with what they report: progress, metrics and an ETA
    (the task's own ``eta_s`` metric, else from its progress and how long it has run)."""
    now = 10_000.0
    tasks = {
        "train.lr=0.2": task_body(
            state="running", attempt=1, started_at=now - 30, progress=0.3,
            metrics={"epoch": 3, "loss": 0.21},
        ),
        "train.lr=1.0": task_body(
            state="running", attempt=1, started_at=now - 5, progress=0.5, metrics={"eta_s": 400}
        ),
        "prep": task_body(state="completed", attempt=1, started_at=1.0, finished_at=2.0),
        "silent": task_body(state="running", attempt=1, started_at=now - 60),
    }  # fmt: skip
    wf = Workflow.model_validate(
        workflow_body(
            id="wf-1",
            status="running",
            total=4,
            counts={"running": 3, "completed": 1},
            tasks=tasks,
        )
    )
    text = _text(render.live_view(wf, render.Pace(None, None, None), now=now))
    rows = {
        line.split()[0]: line for line in text.splitlines() if line.startswith(("train", "silent"))
    }
    assert "30% epoch=3 loss=0.21" in rows["train.lr=0.2"], text
    assert "ETA 1m10s" in rows["train.lr=0.2"], text  # 30 s for 30%: 70 s for the rest
    assert "ETA 6m40s" in rows["train.lr=1.0"], text  # what it said
    assert "running 1m00s" in rows["silent"], text
    assert "ETA" not in rows["silent"], text

    plain = live_render.progress_lines(wf, now=now)
    assert "  train.lr=0.2: 30% epoch=3 loss=0.21, running 30s, ETA 1m10s" in plain, plain
