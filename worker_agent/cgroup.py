"""One cgroup v2 group per task, so that stopping a task stops every process it started.

A process group only holds the processes that stay in it: ``setsid`` (or ``setpgid``) takes a
process out, and a signal to the group no longer reaches it. A cgroup holds every descendant
whatever it does (only a writer of the cgroup tree can move a process out), and writing ``1`` to
its ``cgroup.kill`` SIGKILLs all of them at once (Linux 5.14+).

Where it works: Linux with a cgroup v2 hierarchy (unified, or the ``unified`` mount of a hybrid
setup) in which the agent may create groups: as root, or in a group delegated to it (systemd
``Delegate=yes``, as the VM worker's unit sets). ``probe()`` checks exactly that once at start;
anywhere else (macOS, a container with a read-only /sys/fs/cgroup, cgroup v1 only) the runner
falls back to the process group and the agent logs why.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

JOIN_SCRIPT = 'echo $$ > "$1" || exit 125; shift; exec /bin/sh -c "$1"'
"""Run by ``/bin/sh -c`` with the group's ``cgroup.procs`` and the task command as arguments: the
shell moves itself into the group, then execs the command, so the task and everything it starts
are in the group from their first instruction (no fork can happen before the move)."""

JOIN_FAILED = 125
"""Exit status of the join script when the shell could not enter its group."""


@dataclass(frozen=True)
class TaskCgroup:
    """The cgroup of one running task."""

    path: Path

    @classmethod
    def create(cls, parent: Path) -> TaskCgroup:
        path = parent / f"dagq-task-{uuid.uuid4().hex[:16]}"
        path.mkdir(mode=0o755)
        return cls(path)

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def argv(self, cmd: str) -> list[str]:
        """The command line that runs ``cmd`` inside this group."""
        return ["/bin/sh", "-c", JOIN_SCRIPT, "dagq-task", str(self.procs_file), cmd]

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in self.procs_file.read_text().split()]
        except (OSError, ValueError):
            return []

    def populated(self) -> bool:
        """Whether a live process is left (zombies do not count)."""
        try:
            events = (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False
        return "populated 1" in events

    def signal(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)

    def kill(self) -> None:
        """SIGKILL every process in the group, atomically (no fork escapes it)."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except FileNotFoundError:
            return
        except OSError:
            self.signal(signal.SIGKILL)

    def remove(self) -> None:
        """Remove the (empty) group; a group still holding a process is left for the next try."""
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _own_cgroup() -> Path | str:
    """This process's cgroup v2 directory, or why there is none."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "no /proc/self/cgroup (not Linux)"
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None:
        return "no cgroup v2 hierarchy (cgroup v1 only)"
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "no /proc/self/mountinfo"
    for line in mounts:
        fields = line.split()
        separator = fields.index("-")
        if fields[separator + 1] == "cgroup2":
            root, mountpoint = fields[3], fields[4]
            inside = os.path.relpath(relative, root)
            if inside.startswith(".."):
                continue  # this mount does not show our group
            return Path(mountpoint) / inside
    return "no cgroup2 file system mounted"


def probe() -> Path | str:
    """The directory under which task cgroups can be created, or why they cannot.

    Creates a group, starts a shell that joins it with the same script tasks use, and checks that
    the group has ``cgroup.kill``; everything is removed again.
    """
    parent = _own_cgroup()
    if isinstance(parent, str):
        return parent
    try:
        group = TaskCgroup.create(parent)
    except OSError as exc:
        return f"cannot create a cgroup under {parent} ({exc.strerror}): not root and not delegated"
    try:
        if not (group.path / "cgroup.kill").exists():
            return "cgroup.kill is missing (Linux before 5.14)"
        joined = subprocess.run(group.argv("exit 0"), check=False, capture_output=True)
        if joined.returncode != 0:
            error = joined.stderr.decode(errors="replace").strip()
            return f"cannot move a process into a cgroup under {parent}: {error}"
        return parent
    finally:
        group.remove()
