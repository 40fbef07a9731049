"""Run a GPU VM's first boot, as rendered from the templates, in a sandbox.

cloud-init on the VM installs ``packages``, writes ``write_files``, runs ``runcmd`` in order and
reboots when ``power_state.condition`` holds. The sandbox does the same with the rendered user-data:
files land under a temporary root (every absolute path the scripts use is moved there), and the
commands that would change the machine (``apt-get``, ``ubuntu-drivers``, ``systemctl``,
``nvidia-smi``, ``useradd``, ``iptables``, ``python3``, pip) are stubs on ``PATH`` that record their
command lines. The scripts themselves (sh, sed, the parsing of dpkg-query) run for real.
"""

from __future__ import annotations

import base64
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Where the scripts write, moved under the sandbox's root.
_MOVED = ("/opt/dagq", "/etc/dagq", "/run/dagq", "/var/lib/dagq", "/etc/systemd/system")

_RECORD = 'printf "%s\\n" "$(basename "$0") $*" >> "$SANDBOX/calls.log"\n'
# Each stub records its command line; a few also act like the real command where a script reads
# the effect (the driver package appears once installed, iptables -C finds no rule, python3 -m
# venv creates a pip).
_STUBS = {
    "apt-get": "",
    "systemctl": "",
    "useradd": "",
    "nvidia-smi": "echo 'GPU 0: Tesla T4 (UUID: GPU-sandbox)'\n",
    "ubuntu-drivers": 'touch "$SANDBOX/driver-installed"\n',
    "dpkg-query": '[ -f "$SANDBOX/driver-installed" ] && echo nvidia-kernel-common-550-server\n'
    "exit 0\n",
    "iptables": 'case "$1" in -C) exit 1;; esac\n',
    "install": 'for last; do :; done; mkdir -p "$last"\n',
    "python3": 'mkdir -p "$3/bin"; cp "$SANDBOX/bin/pip" "$3/bin/pip"\n',
    "pip": "",
}


@dataclass
class FirstBoot:
    """What a first boot did: every stubbed command line, the root it wrote into, and whether
    cloud-init would reboot (power_state) at the end."""

    calls: list[str]
    root: Path
    reboots: bool
    failures: list[str]
    """runcmd entries that exited non-zero (cloud-init logs them and goes on)."""

    def ran(self, command: str) -> bool:
        """Whether a recorded command line starts with ``command``."""
        return any(call.startswith(command) for call in self.calls)


def _move(text: str, root: Path) -> str:
    for prefix in _MOVED:
        text = text.replace(prefix, f"{root}{prefix}")
    return text


def _stubs(sandbox: Path) -> Path:
    bin_dir = sandbox / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in _STUBS.items():
        stub = bin_dir / name
        stub.write_text("#!/bin/sh\n" + _RECORD + body)
        stub.chmod(0o755)
    return bin_dir


def _write_files(cloud_init: dict[str, Any], root: Path) -> None:
    for entry in cloud_init.get("write_files", []):
        target = Path(_move(entry["path"], root))
        target.parent.mkdir(parents=True, exist_ok=True)
        content = entry.get("content", "")
        if entry.get("encoding") in ("b64", "base64"):
            target.write_bytes(base64.b64decode(content))
        else:
            target.write_text(_move(content, root))
        target.chmod(int(str(entry.get("permissions", "0644")), 8))


def _command(entry: Any, root: Path) -> list[str]:
    # A runcmd entry is a list (argv, no shell) or a string (run by sh).
    if isinstance(entry, list):
        return [_move(str(arg), root) for arg in entry]
    return ["sh", "-c", _move(str(entry), root)]


def first_boot(cloud_init: dict[str, Any], sandbox: Path) -> FirstBoot:
    """Provision a VM from rendered user-data inside ``sandbox`` (an empty directory)."""
    root = sandbox / "root"
    for directory in ("run", "etc", "opt", "var/lib"):  # what every machine has
        (root / directory).mkdir(parents=True)
    bin_dir = _stubs(sandbox)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SANDBOX": str(sandbox),
        "HOME": str(sandbox),
        "LANG": "C.UTF-8",
    }
    failures: list[str] = []

    def run(argv: list[str]) -> None:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        if done.returncode:
            failures.append(f"{shlex.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")

    if cloud_init.get("package_update"):
        run(["apt-get", "update"])
    if cloud_init.get("packages"):
        run(["apt-get", "install", "-y", *cloud_init["packages"]])
    _write_files(cloud_init, root)
    for entry in cloud_init.get("runcmd", []):
        run(_command(entry, root))
    condition = cloud_init.get("power_state", {}).get("condition", False)
    reboots = condition is True or (
        isinstance(condition, str)
        and subprocess.run(["sh", "-c", _move(condition, root)], env=env).returncode == 0
    )
    log = sandbox / "calls.log"
    calls = log.read_text().splitlines() if log.exists() else []
    return FirstBoot(calls=calls, root=root, reboots=reboots, failures=failures)
