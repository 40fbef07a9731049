"""Running tasks as a user of their own (``--task-user``), not as the agent's user.

A task that runs as the agent's user can read what the agent can: its environment
(``/proc/<agent>/environ``), its settings file (``/etc/dagq/worker.env`` on the VMs), its token
caches. As another, unprivileged user it can read none of them, and the VM's firewall can tell its
packets apart (the Scale Set keeps the task user off the instance metadata service, where managed
identity tokens are handed out). Starting a process as another user needs root: the agent runs as
root on the VMs (systemd), and each attempt's directory is handed to the task user.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError


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

    def give(self, *paths: Path) -> None:
        """Make ``paths`` (an attempt's directories) the task user's."""
        for path in paths:
            os.chown(path, self.uid, self.gid)

    def environment(self) -> dict[str, str]:
        """The variables that name the user, replacing the agent's own."""
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}
