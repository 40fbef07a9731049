"""Run a command (``make test``: the suite) in a network namespace that has only loopback.

``python -m tests.support.netns CMD ARGS...`` re-runs itself under ``unshare --net`` (plus
``--map-root-user`` when not root, so an ordinary user may do it), brings the namespace's ``lo``
up, and executes ``CMD``. Every process the command starts — Python or not: Azurite, chromium, the
workers' tasks — then has no route but loopback, which the in-process guard
(``netguard_site/sitecustomize.py``) cannot promise. Installs happen before (``make install``),
outside the namespace.

Where ``unshare`` is missing or the kernel or container refuses new namespaces, the command runs
as it is, the in-process guard alone watching; a line on stderr says so. ``DAGQ_TEST_NETNS`` tells
the session which case it is in (``1``: the namespace).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys

ENV = "DAGQ_TEST_NETNS"
_INSIDE = "--inside"
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def loopback_up() -> None:
    """Bring ``lo`` up in this (new) namespace: no ``ip`` binary needed, one ioctl."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP))


def unshare_command() -> list[str] | None:
    """The ``unshare`` prefix that works on this machine, or None (probed once, harmlessly)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    # root keeps its real uid (tests run tasks as other users); anyone else maps to root inside
    prefix = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--map-root-user", "--net"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


def main(argv: list[str]) -> int:
    """Become ``argv`` in the namespace (or, failing that, as it is); 2 for a usage error."""
    if argv[:1] == [_INSIDE]:
        loopback_up()
        os.environ[ENV] = "1"
        os.execvp(argv[1], argv[1:])
    if not argv:
        print("usage: python -m tests.support.netns CMD [ARGS...]", file=sys.stderr)
        return 2
    prefix = unshare_command()
    if prefix is None:
        print(
            "netns: cannot create a network namespace here (unshare missing or refused); "
            "running without one: only the in-process network guard watches",
            file=sys.stderr,
        )
        os.environ[ENV] = "0"
        os.execvp(argv[0], argv)
    os.execv(prefix[0], [*prefix, sys.executable, "-m", "tests.support.netns", _INSIDE, *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
