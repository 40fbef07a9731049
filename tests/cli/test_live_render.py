"""How the CLI shows live work (issue 20): progress in `status`, attempts, GPUs, log hints."""

from __future__ import annotations

import pytest
from rich.console import Console

from shared.cli import main, render
from shared.cli.follow import conclude
from shared.cli.live_render import attempts_table, gpu_text, progress_text
from shared.client import Workflow
from shared.views import AttemptList, GpuView
from tests.support.fake_api import task_body, workflow_body


def _text(renderable: object, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_progress_text_keeps_whole_numbers() -> None:
    assert progress_text(0.3, {"epoch": 12.0, "loss": 0.21}) == "30% epoch=12 loss=0.21"
    assert progress_text(None, None) == ""
    long = {"a_very_long_metric_name_number_1": 1.0, "a_very_long_metric_name_number_2": 2.0}
    assert progress_text(0.5, long) == "50% a_very_long_metric_name_number_1=1"  # never cut


def test_status_shows_a_progress_column_only_while_a_task_reports_progress() -> None:
    running = task_body(state="running", attempt=1, progress=0.3, metrics={"epoch": 12.0})
    body = workflow_body(total=2, counts={"running": 1, "completed": 1}, tasks={
        "train": running, "prep": task_body(state="completed", attempt=1, exit_code=0),
    })  # fmt: skip
    text = _text(render.status_view(Workflow.model_validate(body)))
    assert "progress" in text
    assert "30% epoch=12" in text
    quiet = workflow_body(total=1, counts={"completed": 1}, tasks={"prep": task_body()})
    assert "progress" not in _text(render.status_view(Workflow.model_validate(quiet)))


def test_attempts_table_and_gpu_text() -> None:
    listing = AttemptList.model_validate({"workflow_id": "w", "task": "t", "items": [
        {"attempt": 1, "current": False, "kept": True, "state": "failed", "queue": "cpu",
         "queued_at": 10.0, "started_at": 11.0, "finished_at": 15.0, "exit_code": 75,
         "error": "exit code 75: simulated network error", "worker": "w1", "log": None,
         "log_url": None},
        {"attempt": 2, "current": True, "kept": True, "state": "running", "queue": "cpu",
         "queued_at": 16.0, "started_at": 17.0, "finished_at": None, "exit_code": None,
         "error": None, "worker": "w2", "log": None, "log_url": None},
    ]})  # fmt: skip
    text = _text(attempts_table(listing))
    assert "75" in text
    assert "simulated network error" in text
    assert "2*" in text
    gpus = [GpuView(index=0, utilization=87, memory_used_mib=30720, memory_total_mib=81920)]
    assert gpu_text(gpus) == "0:87% 30/80G"
    assert gpu_text([]) == "-"


def test_a_log_is_suggested_only_for_a_task_that_ran() -> None:
    never = task_body(state="failed", attempt=0, error="expansion failed: no list")
    body = workflow_body(status="failed", total=1, counts={"failed": 1}, tasks={"fan": never})
    console = Console(width=120, record=True, color_system=None)
    conclude(Workflow.model_validate(body), console)
    text = console.export_text()
    assert "expansion failed" in text
    assert "dagq logs" not in text
    ran = task_body(state="failed", attempt=1, started_at=5.0, error="exit code 1")
    body = workflow_body(status="failed", total=1, counts={"failed": 1}, tasks={"t": ran})
    console = Console(width=120, record=True, color_system=None)
    conclude(Workflow.model_validate(body), console)
    assert "dagq logs wf t" in console.export_text()


def test_purge_dry_run_without_an_age_says_it_needs_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["purge", "--dry-run", "--api-url", "http://127.0.0.1:9"])
    assert code == 2
    assert "--dry-run needs --older-than AGE" in capsys.readouterr().err


def test_retry_wait_shows_no_stale_status_and_cancel_wait_no_pace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.support.fake_api import fake_api

    stale = workflow_body(id="wf", status="failed", run=1, total=2, counts={"failed": 2},
                          finished_at=1001.0)  # fmt: skip
    rerun = workflow_body(id="wf", status="running", run=2, total=2,
                          counts={"completed": 1, "running": 1})  # fmt: skip
    done = workflow_body(id="wf", status="completed", run=2, total=2, counts={"completed": 2},
                         finished_at=1e12, tasks={})  # fmt: skip
    with fake_api() as api:
        api.on("POST", "/api/workflows/wf/retry", 202,
               {"id": "wf", "status": "failed", "run": 2, "url": "u"})  # fmt: skip
        for body in (stale, stale, rerun, done):
            api.on("GET", "/api/workflows/wf", 200, body)
        code = main(["retry", "wf", "--wait", "--interval", "0.01", "--api-url", api.url])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "wf failed:" not in out  # the status before the retry applied is not shown
    assert "wf running: 1/2 finished" in out
    cancelling = workflow_body(id="wf", status="cancelling", total=3,
                               counts={"completed": 1, "running": 2})  # fmt: skip
    cancelled = workflow_body(id="wf", status="cancelled", total=3, finished_at=2000.0,
                              counts={"completed": 1, "cancelled": 2}, tasks={})  # fmt: skip
    with fake_api() as api:
        api.on("POST", "/api/workflows/wf/cancel", 202,
               {"id": "wf", "status": "running", "cancel_requested": True, "url": "u"})  # fmt: skip
        for body in (cancelling, cancelling, cancelled):
            api.on("GET", "/api/workflows/wf", 200, body)
        code = main(["cancel", "wf", "--wait", "--interval", "0.01", "--api-url", api.url])
    out = capsys.readouterr().out
    assert code == 5, out
    assert "cancelling" in out
    assert "tasks/s" not in out
    assert "ETA" not in out


def test_submit_json_prints_an_error_as_json(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    import json
    from pathlib import Path

    from tests.support.fake_api import fake_api

    assert isinstance(tmp_path, Path)
    definition = tmp_path / "bad.yaml"
    definition.write_text("name: x\ntasks: []\n")
    problem = {"title": "Invalid definition", "status": 422, "detail": "1 problem",
               "errors": [{"loc": "tasks", "msg": "no tasks"}]}  # fmt: skip
    with fake_api() as api:
        api.on("POST", "/api/workflows", 422, problem)
        code = main(["submit", str(definition), "--json", "--api-url", api.url])
    captured = capsys.readouterr()
    assert code == 2
    assert json.loads(captured.out)["error"]["errors"] == [{"loc": "tasks", "msg": "no tasks"}]
    assert "Invalid definition" in captured.err
