"""More instances of the local host: ``python -m devtools.localhost --instances N``.

Azure Functions scales an app out to several instances, each polling the queue triggers and
contending for the partition leases. Locally the built-in host runs as instance 0 (HTTP on its
port, the timers: the platform fires a timer on one instance only) and starts N-1 more hosts as
separate processes — queue triggers only, HTTP on a free port — against the same storage, so
scale-out, lease hand-over and bouncing happen for real. They stop with instance 0.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path


def start_instances(
    count: int, app_dir: Path, settings: Path | None
) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` extra hosts (instances 1..count) and return their processes."""
    command = [
        sys.executable, "-m", "devtools.localhost", "--builtin", "--instances", "1",
        "--port", "0", "--no-timers", "--app-dir", str(app_dir),
    ]  # fmt: skip
    if settings is not None:
        command += ["--settings", str(settings)]
    return [
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        for _ in range(count)
    ]


def stop_instances(processes: list[subprocess.Popen[bytes]], timeout_s: float = 30.0) -> None:
    """SIGTERM the extra hosts and wait for them (SIGKILL after ``timeout_s``)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
