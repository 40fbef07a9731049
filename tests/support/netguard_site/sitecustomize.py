"""The test network guard, in every Python process of a test run (loaded as ``sitecustomize``).

dagq's suite, local stack and benchmarks may contact nothing but loopback. The test session puts
this directory first on ``PYTHONPATH`` and sets ``DAGQ_TEST_NETGUARD_DIR``, so every Python
subprocess it starts (workers, the local Functions host, the CLI) installs the same audit hook
(``sys.addaudithook``) as the test process itself. The hook refuses a connection, datagram or name
lookup for anything but loopback (``PermissionError``: nothing leaves the machine) and records the
offender — process, command line, address, the innermost frames — as a JSON line in that
directory; the session's ``tests/support/netguard.py`` fails the test during which it happened.

This hook is the fallback. ``make test`` runs the suite in a network namespace of its own that
has only loopback (``tests/support/netns.py``, where ``unshare`` is allowed), which covers every
process, Python or not; without it, not covered are: non-Python processes (Azurite runs with
``--disableTelemetry`` and binds 127.0.0.1) and Python started with ``-I``/``-S`` or with an
environment that drops ``PYTHONPATH`` (the session adds the guard's variables to the workers'
``DAGQ_WORKER_TASK_ENV``, so the Python tasks of the workers it starts are guarded too).
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import traceback
from typing import Any

ENV = "DAGQ_TEST_NETGUARD_DIR"
_WATCHED = frozenset(
    {
        "socket.connect",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
    }
)
_SENDS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_LOCAL_NAMES = frozenset({"", "localhost", "localhost.localdomain", "ip6-localhost"})


def _is_loopback(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].lower()
    if name in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name other than localhost: its lookup may leave the machine


def _host_of(event: str, args: tuple[Any, ...]) -> Any:
    """The host an audited call is about, or None when it cannot leave the machine."""
    if event in _SENDS:
        address = args[1]
        if isinstance(address, tuple) and address:
            return address[0]
        return None  # AF_UNIX path (str/bytes) or another local family
    if event == "socket.getnameinfo":
        address = args[0]
        return address[0] if isinstance(address, tuple) and address else None
    return args[0]  # getaddrinfo(host, ...), gethostbyname(host), gethostbyaddr(ip)


_REPORT_DIR: list[str] = []
"""Where this process records offences (set by ``install``; empty until then)."""


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in _WATCHED:
        return
    host = _host_of(event, args)
    if _is_loopback(host):
        return
    record = {
        "pid": os.getpid(),
        "argv": sys.argv,
        "event": event,
        "host": str(host),
        "stack": traceback.format_stack(limit=8)[:-1],
    }
    report = os.path.join(_REPORT_DIR[0], f"{os.getpid()}.jsonl")
    with open(report, "a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")
    raise PermissionError(
        13, f"dagq test network guard: {event} to {host!r} refused (only loopback is allowed)"
    )


def install(report_dir: str) -> None:
    """Record this process's offences in ``report_dir``, installing the hook on the first call.

    Audit hooks cannot be removed, so a later call only moves the record: a pytest-xdist worker
    inherits its controller's guard at start (this module, from the environment) and its own
    session then records in a directory of its own."""
    first = not _REPORT_DIR
    _REPORT_DIR[:] = [report_dir]
    if first:
        sys.addaudithook(_hook)


if os.environ.get(ENV):
    install(os.environ[ENV])
