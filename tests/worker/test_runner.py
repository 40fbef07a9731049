"""The runner on its own: process groups, stop requests, bounded output capture."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.support.processes import alive
from worker_agent.errors import StartError
from worker_agent.runner import Command, StopRequest, run_command

pytestmark = [pytest.mark.subprocess]


def command(tmp_path: Path, cmd: str, timeout_s: float | None = None) -> Command:
    return Command(
        cmd=cmd, cwd=tmp_path, env=dict(os.environ), log_path=tmp_path / "log.txt",
        timeout_s=timeout_s,
    )  # fmt: skip


def has_text(path: Path) -> bool:
    return path.exists() and bool(path.read_text().strip())


async def wait_for_file(path: Path) -> None:
    for _ in range(200):
        if has_text(path):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


async def test_exit_status_log_and_stderr_tail(tmp_path: Path) -> None:
    cmd = (
        'echo to-stdout; python3 -c \'import sys; sys.stderr.write("e" * 100000 + "END")\'; exit 7'
    )
    result = await run_command(command(tmp_path, cmd), StopRequest(), kill_grace_s=1)
    assert result.returncode == 7
    assert result.stopped is None
    assert result.stderr_tail.endswith("eEND")
    assert len(result.stderr_tail) <= 16 * 1024  # bounded, however much the task wrote
    log = (tmp_path / "log.txt").read_bytes()
    assert b"to-stdout\n" in log
    assert log.count(b"e") >= 100000


async def test_processes_left_behind_by_the_shell_are_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = await run_command(
        command(tmp_path, f"sleep 60 & echo $! > {pid_file}"), StopRequest(), kill_grace_s=1
    )
    assert result.returncode == 0
    assert not alive(int(pid_file.read_text()))


async def test_stop_request_sigterms_then_sigkills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    stop = StopRequest()
    run = asyncio.create_task(
        run_command(
            command(tmp_path, f"(trap '' TERM; exec sleep 60) & echo $! > {pid_file}; wait"),
            stop,
            kill_grace_s=0.3,
        )
    )
    await wait_for_file(pid_file)
    stop.request("cancelled")
    stop.request("shutdown")  # the first reason wins
    result = await asyncio.wait_for(run, timeout=10)
    assert result.stopped == "cancelled"
    assert result.returncode == 128 + 15  # the shell obeyed SIGTERM
    assert not alive(int(pid_file.read_text()))  # its child needed SIGKILL


async def test_timeout(tmp_path: Path) -> None:
    result = await run_command(command(tmp_path, "sleep 30", 0.2), StopRequest(), kill_grace_s=1)
    assert result.stopped == "timeout"


async def test_cancelling_the_runner_kills_the_task(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    run = asyncio.create_task(
        run_command(
            command(tmp_path, f"echo $$ > {pid_file}; sleep 60"), StopRequest(), kill_grace_s=5
        )
    )
    await wait_for_file(pid_file)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    for _ in range(100):
        if not alive(int(pid_file.read_text())):
            break
        await asyncio.sleep(0.05)
    assert not alive(int(pid_file.read_text()))


async def test_missing_cwd_is_a_start_error(tmp_path: Path) -> None:
    cmd = Command(cmd="true", cwd=tmp_path / "nope", env={}, log_path=tmp_path / "log")
    with pytest.raises(StartError, match="cannot start the command"):
        await run_command(cmd, StopRequest(), kill_grace_s=1)
