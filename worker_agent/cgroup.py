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

JOIN_SCRIPT = (
    'read go || exit 125; [ "$go" = go ] || exit 125; exec </dev/null; exec /bin/sh -c "$1"'
)
"""Run by ``/bin/sh -c`` with the task command as argument, stdin a pipe from the agent: the shell
waits until the agent has moved it into the task's cgroup and says "go", then execs the command
(stdin /dev/null), so the task and everything it starts are in the group from their first
instruction. The agent (root, or the owner of a delegated cgroup) does the move, so this works the
same when the task runs as another, unprivileged user (task_user.py)."""

JOIN_FAILED = 125
"""Exit status of the join script when the agent did not let it start."""


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

    @staticmethod
    def argv(cmd: str) -> list[str]:
        """The command line that runs ``cmd`` once the agent has moved it into its group."""
        return ["/bin/sh", "-c", JOIN_SCRIPT, "dagq-task", cmd]

    def add(self, pid: int) -> None:
        """Move process ``pid`` into this group (OSError when the kernel refuses)."""
        self.procs_file.write_text(str(pid))

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

    Creates a group, moves a shell into it the way tasks are moved, and checks that the group has
    ``cgroup.kill``; everything is removed again.
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
        shell = subprocess.Popen(group.argv("exit 0"), stdin=subprocess.PIPE)
        try:
            group.add(shell.pid)
        except OSError as exc:
            return f"cannot move a process into a cgroup under {parent} ({exc.strerror})"
        finally:
            assert shell.stdin is not None
            shell.communicate(b"go\n", timeout=10)
        if shell.returncode != 0:
            return f"a process moved into a cgroup under {parent} could not run"
        return parent
    finally:
        group.remove()
