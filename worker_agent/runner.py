"""Run one task command: ``/bin/sh -c cmd`` in its own process group (and cgroup), output to a log.

The task's processes are the unit of control (processes.py): cancel, timeout and shutdown signal
all of them (SIGTERM, then SIGKILL after a grace period), so grandchildren (``python train.py &``,
pipelines, ``torchrun`` workers) never outlive their task. With a cgroup per task (cgroup.py) that
includes a process that left the process group with ``setsid``; without one (no cgroup v2 the agent
may write) such a process escapes the kill: that is the documented limit of the fallback.
Processes still running when the shell exits are stopped the same way. Memory stays bounded
whatever the task prints: stdout goes straight to the log file, stderr is copied there in chunks
while only a short tail is kept for the error message.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from worker_agent.cgroup import TaskCgroup
from worker_agent.errors import StartError
from worker_agent.logfile import LogFile
from worker_agent.processes import TaskProcesses

StopReason = Literal["timeout", "cancelled", "shutdown"]
"""Why a running task was stopped before it exited by itself: its timeout_s passed, its workflow
was cancelled, or the worker is shutting down / being preempted."""

_TAIL_BYTES = 16 * 1024
_CHUNK = 64 * 1024


class StopRequest:
    """A one-shot request to stop a running task; the first reason given wins."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: StopReason | None = None

    def request(self, reason: StopReason) -> None:
        if self.reason is None:
            self.reason = reason
            self._event.set()

    async def wait(self) -> StopReason:
        await self._event.wait()
        assert self.reason is not None
        return self.reason


@dataclass(frozen=True)
class Command:
    """What to run and where."""

    cmd: str
    cwd: Path
    env: dict[str, str]
    log_path: Path
    timeout_s: float | None = None
    log: LogFile | None = None
    """The open log to write to (the caller reads it back); None: open ``log_path`` here."""
    cgroup_parent: Path | None = None
    """Where to create the task's own cgroup (``cgroup.probe()``); None: process group only."""
    user: tuple[int, int] | None = None
    """``(uid, gid)`` to run the task as (task_user.py); None: the agent's own user."""
    cwd_fd: int | None = None
    """An open descriptor of ``cwd`` to start in instead of its path: the child changes directory
    before it drops to ``user``, and a descriptor cannot be redirected by a link meanwhile."""


@dataclass(frozen=True)
class RunResult:
    """How a command ended."""

    returncode: int
    """Exit status, shell style: 128 + N when killed by signal N."""
    started_at: float
    finished_at: float
    stopped: StopReason | None
    """Set when the worker stopped the task (then ``returncode`` is the signal's)."""
    stderr_tail: str
    """The last bytes the command wrote to stderr, decoded leniently."""
    pid: int


async def _copy_stderr(stream: asyncio.StreamReader, log: int, tail: bytearray) -> None:
    while chunk := await stream.read(_CHUNK):
        os.write(log, chunk)
        tail.extend(chunk)
        if len(tail) > _TAIL_BYTES:
            del tail[: len(tail) - _TAIL_BYTES]


async def run_command(command: Command, stop: StopRequest, *, kill_grace_s: float) -> RunResult:
    """Run ``command`` until it exits, its timeout passes or ``stop`` is requested."""
    log = command.log
    if log is None:
        try:
            log = LogFile.create(command.log_path)
        except OSError as exc:
            raise StartError(f"cannot open the log {command.log_path}: {exc}") from None
    try:
        return await _run(command, stop, log.fd, kill_grace_s)
    finally:
        if command.log is None:
            log.close()


async def _run(command: Command, stop: StopRequest, log: int, kill_grace_s: float) -> RunResult:
    try:
        cgroup = TaskCgroup.create(command.cgroup_parent) if command.cgroup_parent else None
    except OSError as exc:
        raise StartError(f"cannot create the task's cgroup: {exc}") from None
    # stderr goes through a pipe of our own rather than asyncio's PIPE: on Python 3.11 waiting for
    # the process also waits for its pipes to close, which a leftover background process would
    # hold off for as long as it lives. With a cgroup, stdin is the pipe that says "go" once the
    # shell has been moved into it (cgroup.JOIN_SCRIPT).
    read_fd, write_fd = os.pipe()
    go_read, go_write = os.pipe() if cgroup else (-1, -1)
    started_at = time.time()
    try:
        proc = await asyncio.create_subprocess_exec(
            *(cgroup.argv(command.cmd) if cgroup else ["/bin/sh", "-c", command.cmd]),
            cwd=command.cwd if command.cwd_fd is None else f"/proc/self/fd/{command.cwd_fd}",
            env=command.env,
            stdin=go_read if cgroup else asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=write_fd,
            start_new_session=True,  # its own process group (pgid == pid): signal it as a whole
            **_as_user(command.user),
        )
    except (OSError, ValueError) as exc:
        os.close(read_fd)
        if cgroup is not None:
            os.close(go_write)
            cgroup.remove()
        raise StartError(f"cannot start the command in {command.cwd}: {exc}") from None
    finally:
        os.close(write_fd)
        if cgroup is not None:
            os.close(go_read)
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    processes = TaskProcesses(proc.pid, cgroup)
    try:
        if cgroup is not None:
            _join(cgroup, proc.pid, go_write)
        return await _supervise(
            proc, processes, command, stop, log, reader, started_at, kill_grace_s
        )
    except StartError:
        await proc.wait()  # the shell exits at once: it never got "go"
        raise
    finally:
        transport.close()
        await processes.release()


def _as_user(user: tuple[int, int] | None) -> dict[str, Any]:
    """Popen arguments that start the task as ``(uid, gid)`` with no supplementary groups."""
    if user is None:
        return {}
    uid, gid = user
    return {"user": uid, "group": gid, "extra_groups": []}


def _join(cgroup: TaskCgroup, pid: int, go: int) -> None:
    """Move the waiting shell into its cgroup, then let it run (or, if that fails, exit)."""
    try:
        cgroup.add(pid)
        os.write(go, b"go\n")
    except OSError as exc:
        raise StartError(f"cannot move the task into its cgroup {cgroup.path}: {exc}") from None
    finally:
        os.close(go)


async def _supervise(
    proc: asyncio.subprocess.Process,
    processes: TaskProcesses,
    command: Command,
    stop: StopRequest,
    log: int,
    reader: asyncio.StreamReader,
    started_at: float,
    kill_grace_s: float,
) -> RunResult:
    tail = bytearray()
    copier = asyncio.create_task(_copy_stderr(reader, log, tail))
    exited = asyncio.create_task(proc.wait())
    stopping = asyncio.create_task(stop.wait())
    timeout = command.timeout_s
    try:
        done, _ = await asyncio.wait(
            {exited, stopping}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if exited not in done:
            stop.request("timeout")  # no-op when a stop was already requested
            await processes.stop(kill_grace_s)
            await exited
        stopping.cancel()
        # Background processes the shell left behind belong to the task: stop them too.
        await processes.stop(kill_grace_s)
        try:
            # stderr reaches EOF once every holder of the pipe is gone; one that left the group
            # (setsid) might keep it open, so do not wait for it forever.
            await asyncio.wait_for(copier, timeout=2.0)
        except TimeoutError:
            copier.cancel()
    except asyncio.CancelledError:
        # The agent itself is being torn down: never leave the task running unsupervised.
        processes.kill()
        for task in (copier, exited, stopping):
            task.cancel()
        raise
    finished_at = time.time()
    returncode = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    if returncode < 0:
        returncode = 128 - returncode
    return RunResult(
        returncode=returncode,
        started_at=started_at,
        finished_at=finished_at,
        stopped=stop.reason if exited not in done else None,
        stderr_tail=tail.decode("utf-8", errors="replace"),
        pid=proc.pid,
    )
