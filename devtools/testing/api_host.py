"""Run the Functions app under the local host (devtools.localhost) as a subprocess, for tests.

    host = start_host(storage_env, tmp_path / "host.log")
    ... httpx against host.url (http://127.0.0.1:PORT/api) ...
    host.stop()

The host gets the test's storage environment (Azurite, its own prefix), a fast sweep schedule and
a free port; its log goes to a file that failing tests print.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from devtools.testing.signing import app_env

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
FAST_SWEEPS = "*/1 * * * * *"


@dataclass
class HostProcess:
    """A running local host."""

    url: str
    """Base URL of the API, e.g. ``http://127.0.0.1:43121/api``."""
    process: subprocess.Popen[str]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM, then SIGKILL if it does not stop in time; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


def start_host(
    env: dict[str, str],
    log_path: Path,
    *,
    app_dir: Path = REPO_ROOT,
    extra_args: tuple[str, ...] = (),
    timeout_s: float = 60.0,
) -> HostProcess:
    """Start ``python -m devtools.localhost --builtin --port 0`` and wait until it listens."""
    full_env = {**os.environ, "DAGQ_SWEEP_SCHEDULE": FAST_SWEEPS, **app_env(), **env}
    log_file = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "devtools.localhost", "--builtin", "--port", "0",
            "--app-dir", str(app_dir), "--settings", str(log_path.with_suffix(".none.json")),
            "--grace-s", "5", *extra_args,
        ],
        cwd=REPO_ROOT, env=full_env, stdout=subprocess.PIPE, stderr=log_file, text=True,
    )  # fmt: skip
    log_file.close()
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    url = None
    while url is None:
        line = process.stdout.readline()
        if not line:
            process.wait(timeout=10)
            raise RuntimeError(
                f"the local host exited ({process.returncode}):\n{log_path.read_text()}"
            )
        if "listening on " in line:
            url = line.rsplit("listening on ", 1)[1].strip()
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the local host did not start:\n{log_path.read_text()}")
    threading.Thread(target=lambda: [None for _ in process.stdout or ()], daemon=True).start()
    return HostProcess(url=url, process=process, log_path=log_path)
