"""The processes of one task, and stopping all of them: SIGTERM, a grace period, then SIGKILL.

A task is its shell's process group (pgid == the shell's pid) and, where the platform allows it,
its own cgroup (see cgroup.py). The process group alone misses a process that left it with
``setsid``; the cgroup does not, so when there is one it decides what is alive and is killed as a
whole. Both are signalled: the group signal reaches members in the same instant, the cgroup's
``cgroup.kill`` catches everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

from worker_agent.cgroup import TaskCgroup


def _group_members(pgid: int) -> list[tuple[int, bytes, int]] | None:
    """``(pid, state, ppid)`` of every process in group ``pgid`` per /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not (entry.isascii() and entry.isdigit()):
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
    """Whether a live process is left in the process group.

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


@dataclass(frozen=True)
class TaskProcesses:
    """Everything a task started: its process group and, when there is one, its cgroup."""

    pgid: int
    cgroup: TaskCgroup | None = None

    def alive(self) -> bool:
        if self.cgroup is not None:
            return self.cgroup.populated()
        return _group_alive(self.pgid)

    def signal(self, signum: int) -> None:
        _signal_group(self.pgid, signum)
        if self.cgroup is not None:
            self.cgroup.signal(signum)

    def kill(self) -> None:
        """SIGKILL everything now."""
        _signal_group(self.pgid, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill()

    async def stop(self, grace_s: float) -> None:
        """SIGTERM every process, then SIGKILL whatever is left after ``grace_s``."""
        if not self.alive():
            return
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not self.alive():
                return
            await asyncio.sleep(0.05)
        self.kill()

    async def release(self) -> None:
        """Kill what is left and remove the cgroup once it is empty (waits briefly for that)."""
        if self.cgroup is None:
            return
        self.kill()
        try:
            for _ in range(100):
                if not self.cgroup.populated():
                    break
                await asyncio.sleep(0.02)
        finally:  # also when the agent is being torn down (cancelled) meanwhile
            self.cgroup.remove()
