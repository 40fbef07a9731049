"""Run one task command: ``/bin/sh -c cmd`` in its own process group, output to a log file.

The process group is the unit of control: cancel, timeout and shutdown signal the whole group
(SIGTERM, then SIGKILL after a grace period), so grandchildren (``python train.py &``, pipelines,
``torchrun`` workers) never outlive their task. Processes still running when the shell exits are
stopped the same way. Memory stays bounded whatever the task prints: stdout goes straight to the
log file, stderr is copied there in chunks while only a short tail is kept for the error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shared.errors import StartError

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


def _group_members(pgid: int) -> list[tuple[int, bytes, int]] | None:
    """``(pid, state, ppid)`` of every process in group ``pgid`` per /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            members.append((int(entry), fields[0], int(fields[1])))
    return members


def _group_alive(pgid: int) -> bool:
    """Whether a live process is left in the group.

    Zombies do not count: a member whose parent died is re-parented to PID 1, and where PID 1
    does not reap (a container without an init) it stays a zombie that ``kill(0)`` still finds.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a member changed user (setuid): it exists
    members = _group_members(pgid)
    if members is None:
        return True
    _reap_orphans(pgid, members)
    return any(state != b"Z" for _, state, _ in members)


def _reap_orphans(pgid: int, members: list[tuple[int, bytes, int]]) -> None:
    """Reap the group's zombies re-parented to this process (it runs as PID 1 in a container).

    Only those: the shell itself (pid == pgid) is asyncio's to reap.
    """
    me = os.getpid()
    for pid, state, ppid in members:
        if state == b"Z" and ppid == me and pid != pgid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def stop_group(pgid: int, grace_s: float) -> None:
    """SIGTERM every process of the group, then SIGKILL whatever is left after ``grace_s``."""
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        await asyncio.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)


async def _copy_stderr(stream: asyncio.StreamReader, log: int, tail: bytearray) -> None:
    while chunk := await stream.read(_CHUNK):
        os.write(log, chunk)
        tail.extend(chunk)
        if len(tail) > _TAIL_BYTES:
            del tail[: len(tail) - _TAIL_BYTES]


async def run_command(command: Command, stop: StopRequest, *, kill_grace_s: float) -> RunResult:
    """Run ``command`` until it exits, its timeout passes or ``stop`` is requested."""
    command.log_path.parent.mkdir(parents=True, exist_ok=True)
    log = os.open(command.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return await _run(command, stop, log, kill_grace_s)
    finally:
        os.close(log)


async def _run(command: Command, stop: StopRequest, log: int, kill_grace_s: float) -> RunResult:
    # stderr goes through a pipe of our own rather than asyncio's PIPE: on Python 3.11 waiting for
    # the process also waits for its pipes to close, which a leftover background process would
    # hold off for as long as it lives.
    read_fd, write_fd = os.pipe()
    started_at = time.time()
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command.cmd,
            cwd=command.cwd,
            env=command.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=write_fd,
            start_new_session=True,  # its own process group (pgid == pid): signal it as a whole
        )
    except (OSError, ValueError) as exc:
        os.close(read_fd)
        raise StartError(f"cannot start the command in {command.cwd}: {exc}") from None
    finally:
        os.close(write_fd)
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    try:
        return await _supervise(proc, command, stop, log, reader, started_at, kill_grace_s)
    finally:
        transport.close()


async def _supervise(
    proc: asyncio.subprocess.Process,
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
            await stop_group(proc.pid, kill_grace_s)
            await exited
        stopping.cancel()
        # Background processes the shell left behind belong to the task: stop them too.
        await stop_group(proc.pid, kill_grace_s)
        try:
            # stderr reaches EOF once every holder of the pipe is gone; one that left the group
            # (setsid) might keep it open, so do not wait for it forever.
            await asyncio.wait_for(copier, timeout=2.0)
        except TimeoutError:
            copier.cancel()
    except asyncio.CancelledError:
        # The agent itself is being torn down: never leave the task running unsupervised.
        _signal_group(proc.pid, signal.SIGKILL)
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
