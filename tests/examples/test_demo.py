"""`make demo`'s main path, non-interactively: it runs the pipeline to completion, reports the
best run and where outputs, logs and the model card are (each run in a folder of its own, earlier
runs kept), and stops every process it started — also on Ctrl-C. Kept (`--keep`), its
`stack.env` gives the dagq CLI and a worker the stack."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from shared.settings import Settings
from tests.support.processes import alive

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def _demo(run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGQ_")}
    return subprocess.Popen(
        [sys.executable, "-m", "devtools.demo", "--plain", "--run-dir", str(run_dir),
         "--timeout", "100", *extra],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _this_run(out: str) -> Path:
    [line] = [line for line in out.splitlines() if line.startswith("this run's folder: ")]
    return Path(line.split(": ", 1)[1])


def _started_pids(run_dir: Path) -> list[int]:
    return [int(line) for line in (run_dir / "pids").read_text().split()]


def test_demo_runs_the_pipeline_and_cleans_up(tmp_path: Path) -> None:
    # Long enough that every path the demo prints is wider than its 120 columns.
    base = tmp_path / "demo-runs-in-a-folder-whose-name-is-long-enough-to-pass-the-width"
    earlier = base / "20261201-101500"  # a previous demo's outputs, which it pointed to
    (earlier / "logs").mkdir(parents=True)
    (earlier / "outputs.json").write_text("{}\n")
    (earlier / "published").mkdir()
    (earlier / "published" / "model-card.json").write_text("{}\n")
    demo = _demo(base)
    out, _ = demo.communicate(timeout=240)
    assert demo.returncode == 0, out
    run_dir = _this_run(out)
    assert run_dir.parent == base
    # The earlier run is kept, and the user is told so.
    assert (earlier / "outputs.json").read_text() == "{}\n"
    assert (earlier / "published" / "model-card.json").exists()
    assert f"1 earlier run(s) kept in {base}" in out
    # The model card's path is printed whole on one line, and it exists.
    [card_line] = [line for line in out.splitlines() if line.startswith("published model card: ")]
    card = Path(card_line.split(": ", 1)[1].strip())
    assert card.is_relative_to(run_dir), out
    assert json.loads(card.read_text())["source_run"].startswith("train.")
    assert "next: make demo KEEP=1" in out
    assert "make up" not in out
    assert "completed" in out
    assert "best run: train.lr=" in out
    assert "stopped everything the demo started" in out
    # What it cost (dagq cost ID): the "GPU" runs count GPU-hours, prep and evaluate CPU-hours.
    assert "GPU-hours" in out
    assert "CPU-hours" in out
    assert "estimated cost" in out

    assert f"outputs: {run_dir / 'outputs.json'}\n" in out
    outputs = json.loads((run_dir / "outputs.json").read_text())
    assert outputs["evaluate"]["best"].startswith("train.")
    assert outputs["publish"]["card"] == str(card)
    assert len(outputs["evaluate"]["ranking"]) == 6
    assert "built 240 rows" in (run_dir / "logs" / "prep.log").read_text()
    # Each "GPU" run saw a GPU of its own (the gpu worker hands out fake ids 0 and 1).
    train_logs = "".join(p.read_text() for p in (run_dir / "logs").glob("train.*.log"))
    assert "GPU: 0" in train_logs or "GPU: 1" in train_logs

    pids = _started_pids(run_dir)
    assert len(pids) == 4  # Azurite, the host, two workers
    assert not [pid for pid in pids if alive(pid)]


def test_demo_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    demo = _demo(tmp_path / "demo")
    assert demo.stdout is not None
    deadline = time.monotonic() + 120
    seen = []
    for line in demo.stdout:
        seen.append(line)
        if line.startswith("submitted "):
            break
        assert time.monotonic() < deadline, "".join(seen)
    demo.send_signal(signal.SIGINT)
    rest, _ = demo.communicate(timeout=60)
    assert demo.returncode == 130, "".join(seen) + rest
    assert "stopped everything" in rest
    assert not [pid for pid in _started_pids(_this_run("".join(seen))) if alive(pid)]


def test_demo_keep_serves_the_dashboard_until_ctrl_c(tmp_path: Path) -> None:
    base = tmp_path / "demo"
    demo = _demo(base, "--keep")
    try:
        _check_kept_demo(demo, base)
    finally:  # a kept demo never ends by itself: a failed check must not leave it running
        if demo.poll() is None:
            demo.terminate()  # SIGTERM: the demo's own cleanup, as on Ctrl-C
            demo.wait(timeout=60)


def _check_kept_demo(demo: subprocess.Popen[str], base: Path) -> None:
    assert demo.stdout is not None
    deadline = time.monotonic() + 180
    seen: list[str] = []
    for line in demo.stdout:
        seen.append(line)
        if line.startswith("the stack stays up"):
            break
        assert time.monotonic() < deadline, "".join(seen)
    urls = [line.split(" ", 1)[1].strip() for line in seen if line.startswith("dashboard: ")]
    assert len(urls) == 2, "".join(seen)  # when the stack is ready, and at the run when it ended
    page, run = urls
    assert "#/runs/" in run
    workflow_id = run.rsplit("/", 1)[1]
    with urllib.request.urlopen(page, timeout=10) as answer:  # the stack is still up
        assert answer.status == 200
        assert "<title>dagq dashboard</title>" in answer.read().decode()
    api = page.removesuffix("/ui")
    with urllib.request.urlopen(f"{api}/workflows/{workflow_id}", timeout=10) as answer:
        assert json.loads(answer.read())["status"] == "completed"
    _check_stack_env(seen, base, workflow_id)
    demo.send_signal(signal.SIGINT)
    rest, _ = demo.communicate(timeout=60)
    assert demo.returncode == 0, "".join(seen) + rest  # Ctrl-C is how a kept demo ends
    assert "stopped everything" in rest
    # Where its workflows are now, and that `make up` will not show them (storage of its own).
    assert "this demo's workflows stay in its Azurite data (" in rest, rest
    assert "`make up` has storage of its own: they are not in it" in rest, rest
    assert not [pid for pid in _started_pids(_this_run("".join(seen))) if alive(pid)]
    assert not (base / "stack.env").exists()  # it would name a stack that is gone


def _check_stack_env(seen: list[str], base: Path, workflow_id: str) -> None:
    """The printed line, in a shell with nothing else, gives the CLI and a worker the stack."""
    [line] = [line.strip() for line in seen if line.startswith("  . ")]
    assert line == f". {base / 'stack.env'}"  # outside the working directory: absolute
    cli = subprocess.run(
        ["/bin/sh", "-c", f'{line} && exec "$0" -m shared.cli list --json', sys.executable],
        cwd=REPO_ROOT, env={"PATH": os.environ["PATH"], "HOME": str(base)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert workflow_id in {row["id"] for row in json.loads(cli.stdout)["items"]}
    shown = subprocess.run(
        ["/bin/sh", "-c", f"{line} && env -0"], env={}, capture_output=True, check=True
    ).stdout.split(b"\0")
    env = dict(item.decode().partition("=")[::2] for item in shown if item.startswith(b"DAGQ_"))
    settings = Settings.model_validate(env)  # a worker's storage: the stack's Azurite and prefix
    assert settings.prefix == "demo"
    from azure.storage.blob import BlobServiceClient

    assert settings.storage_connection_string is not None
    blobs = BlobServiceClient.from_connection_string(settings.storage_connection_string)
    outputs = blobs.get_container_client(settings.names.outputs_container)
    assert any(blob.name.startswith(f"{workflow_id}/") for blob in outputs.list_blobs())
