"""`make up` / `make down` (devtools.stack) in a scratch run directory, on free ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from devtools.stackenv import read_env
from tests.support.processes import alive

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def stack(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DAGQ_RUN_DIR": str(run_dir)}
    return subprocess.run(
        [sys.executable, "-m", "devtools.stack", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_up_twice_then_down(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    prefix = "s" + uuid.uuid4().hex[:10]
    try:
        first = stack(run_dir, "up", "--any-ports", "--prefix", prefix)
        assert first.returncode == 0, first.stderr + first.stdout
        env = read_env(run_dir / "stack.env")
        api_url = env["DAGQ_API_URL"]
        assert api_url in first.stdout
        assert env["DAGQ_PREFIX"] == prefix
        assert env["DAGQ_STORAGE_CONNECTION_STRING"].startswith("DefaultEndpointsProtocol=http;")
        assert env["DAGQ_STORAGE"] == env["DAGQ_STORAGE_CONNECTION_STRING"]
        health = httpx.get(f"{api_url}/health", timeout=10)
        assert health.status_code == 200
        assert health.json()["event_queue"]["name"] == f"{prefix}-events"
        state = json.loads((run_dir / "stack.json").read_text())
        names = [p["name"] for p in state["processes"]]
        assert names[:2] == ["azurite", "host"]
        assert {"worker-cpu", "worker-gpu"} <= set(names)
        assert (run_dir / "azurite").is_dir()  # persisted storage

        second = stack(run_dir, "up", "--any-ports", "--prefix", prefix)
        assert second.returncode == 0, second.stderr
        assert json.loads((run_dir / "stack.json").read_text()) == state  # nothing restarted
        assert stack(run_dir, "status").returncode == 0
    finally:
        down = stack(run_dir, "down")
    assert down.returncode == 0, down.stderr
    pids = [p["pid"] for p in state["processes"]]
    assert not [pid for pid in pids if alive(pid)]
    assert not (run_dir / "stack.env").exists()
    assert stack(run_dir, "status").returncode == 1
