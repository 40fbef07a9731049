"""The real stack on the session's Azurite, for the CLI's and the dashboard's integration tests:
the Functions app under the local host and worker agents as subprocesses. Its ``stack`` fixture is
registered once for the suite (``pytest_plugins`` in tests/conftest.py); a test module that needs
another stack (other settings, other workers) overrides it in that module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.azurite import Azurite
from devtools.testing import signing
from devtools.testing.api_host import REPO_ROOT, HostProcess, start_host

EXAMPLES = REPO_ROOT / "examples"


FAST_WORKER = {
    "DAGQ_WORKER_VISIBILITY_S": "10",
    "DAGQ_WORKER_HEARTBEAT_S": "2",
    "DAGQ_WORKER_CANCEL_CHECK_S": "0.3",
    "DAGQ_WORKER_KILL_GRACE_S": "1",
    "DAGQ_WORKER_SHUTDOWN_GRACE_S": "1",
    "DAGQ_WORKER_MIN_POLL_S": "0.05",
    "DAGQ_WORKER_MAX_POLL_S": "0.3",
    "DAGQ_WORKER_METADATA_URL": "",
    "DAGQ_WORKER_LIVE_S": "1",
    "DAGQ_WORKER_PROGRESS_S": "1",  # progress sooner than the registry's 20 s beat
}
"""Worker settings that keep the tests short."""


@dataclass
class Stack:
    host: HostProcess
    workers: list[subprocess.Popen[bytes]]
    env: dict[str, str]
    logs: Path

    @property
    def url(self) -> str:
        return self.host.url

    def diagnostics(self) -> str:
        parts = [f"--- host log\n{self.host.log()[-4000:]}"]
        for log in sorted(self.logs.glob("worker-*.log")):
            parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)


def start_workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
    """Worker agents for the ``cpu`` queue (2 slots) and the ``gpu`` queue (2 fake GPUs)."""
    workers = []
    for queue, extra in (("cpu", ["--concurrency", "2"]), ("gpu", ["--gpus", "0,1"])):
        worker_env = {
            **os.environ, **signing.worker_env(), **env, **FAST_WORKER,
            "DAGQ_WORKER_WORK_DIR": str(logs / f"work-{queue}"),
            "DAGQ_EXAMPLES_DIR": str(EXAMPLES),
        }  # fmt: skip
        with (logs / f"worker-{queue}.log").open("ab") as log:
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "worker_agent", queue, *extra],
                    env=worker_env,
                    cwd=REPO_ROOT,
                    stdout=log,
                    stderr=log,
                )
            )
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=5)


@contextmanager
def running_stack(azurite: Azurite, logs: Path, **env: str) -> Iterator[Stack]:
    """The stack on a prefix of its own, with ``env`` added to its processes' environment."""
    env = {
        "DAGQ_STORAGE": azurite.connection_string,
        "DAGQ_PREFIX": "c" + uuid.uuid4().hex[:12],
        **env,
    }
    host = start_host(env, logs / "host.log")
    workers = start_workers(env, logs)
    running = Stack(host=host, workers=workers, env=env, logs=logs)
    try:
        yield running
    finally:
        stop_workers(workers)
        host.stop()


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def stack(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The app under the local host plus cpu and gpu workers, on a prefix of this module's own."""
    with running_stack(azurite, Path(tmp_path_factory.mktemp("stack"))) as started:
        yield started
