"""Running tasks as a user of their own (``--task-user``), not as the agent's user.

A task that runs as the agent's user can read what the agent can: its environment
(``/proc/<agent>/environ``), its settings file (``/etc/dagq/worker.env`` on the VMs), its token
caches. As another, unprivileged user it can read none of them, and the VM's firewall can tell its
packets apart (the Scale Set keeps the task user off the instance metadata service, where managed
identity tokens are handed out). Starting a process as another user needs root: the agent runs as
root on the VMs (systemd) and in the AKS pods (with only the capabilities it needs), and each
attempt's directory is handed to the task user.

Where the agent is not root (``dagq-worker`` run by a developer, ``make up``), its tasks run as its
own user. Then the agent makes itself not dumpable (:func:`shield_agent`), so that those tasks
cannot read its environment or memory through ``/proc`` or ptrace; files the user can read stay
readable to its tasks (docs/security.md).
"""

from __future__ import annotations

import ctypes
import os
import pwd
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError

_PR_SET_DUMPABLE = 4
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class TaskUser:
    """The account tasks run as."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def lookup(cls, name: str) -> TaskUser:
        """The user called ``name``; a ConfigError when it does not exist or the agent cannot
        start processes as another user."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ConfigError(
                f"task user {name!r} does not exist on this machine: create it "
                f"(useradd --system {name}) or unset DAGQ_WORKER_TASK_USER"
            ) from None
        if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
            raise ConfigError(
                f"running tasks as {name!r} needs the agent to run as root (it runs as uid "
                f"{os.geteuid()}): run it as root or unset DAGQ_WORKER_TASK_USER"
            )
        return cls(name=name, uid=entry.pw_uid, gid=entry.pw_gid, home=entry.pw_dir)

    def hand_over(self, root: Path, directories: Iterable[str], files: Iterable[int]) -> None:
        """Make an attempt's directory the task user's: first its open ``files`` (descriptors) and
        its ``directories`` (names in ``root``), then ``root`` itself, last.

        Until ``root`` is handed over only root can change what it holds, so nothing here goes by
        a path a task could have changed: every change of owner is an ``fchown`` of a descriptor,
        and each directory is opened relative to ``root``'s descriptor without following a link.
        Once ``root`` is the task user's (at the end), another task of that user may replace any
        entry of it, but by then the agent only uses the descriptors it holds (docs/security.md,
        "Privileged file operations")."""
        root_fd = os.open(root, _DIRECTORY)
        try:
            for name in directories:
                fd = os.open(name, _DIRECTORY, dir_fd=root_fd)
                try:
                    os.fchown(fd, self.uid, self.gid)
                finally:
                    os.close(fd)
            for fd in files:
                os.fchown(fd, self.uid, self.gid)
            os.fchown(root_fd, self.uid, self.gid)
        finally:
            os.close(root_fd)

    def environment(self) -> dict[str, str]:
        """The variables that name the user, replacing the agent's own."""
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def shield_agent() -> bool:
    """Make this process not dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``): a process of the same
    user (a task) can then read neither ``/proc/<agent>/environ`` nor its memory, nor ptrace it.
    ``execve`` resets the flag, so the tasks themselves are unaffected. False where the platform
    has no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def describe_isolation(user: TaskUser | None, shielded: bool) -> tuple[bool, str]:
    """Whether tasks are isolated from the agent, and the start-up log line that says how."""
    if user is not None:
        return True, f"tasks run as user {user.name} (uid {user.uid}), not as the agent's user"
    uid = os.geteuid()
    if uid == 0:
        return False, (
            "tasks run as root, like the agent: they can read its settings and credentials; "
            "set --task-user (DAGQ_WORKER_TASK_USER) to an unprivileged user"
        )
    hidden = "its environment and memory are hidden from them" if shielded else "nothing is hidden"
    return False, (
        f"tasks run as the agent's user (uid {uid}): {hidden}, but files that user can read "
        "are readable to them; run the agent as root with --task-user to separate them"
    )
