"""The suite's network guard works (tests/support/netguard.py), and with it the worker's default
configuration contacts nothing but loopback: no probe of the instance metadata address. Where the
machine allows it, ``make test`` runs everything in a namespace with only loopback (netns.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support import netns
from tests.support.netguard import SITE_DIR, Offences, _load_guard
from tests.worker.agents import start_agent
from worker_agent.config import DEFAULT_METADATA_URL


def test_a_connection_outside_loopback_is_refused_and_recorded(netguard: Offences) -> None:
    with socket.socket() as sock:
        sock.settimeout(0.1)
        with pytest.raises(PermissionError, match="network guard"):
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed
    with pytest.raises(PermissionError, match="network guard"):
        socket.getaddrinfo("example.com", 443)  # refused before any DNS query leaves
    (connect, lookup) = netguard.take()
    assert (connect["event"], connect["host"]) == ("socket.connect", "192.0.2.1")
    assert (lookup["event"], lookup["host"]) == ("socket.getaddrinfo", "example.com")
    assert any("test_network_guard.py" in frame for frame in connect["stack"])


def test_sendmsg_and_reverse_lookups_are_watched_too(netguard: Offences) -> None:
    # Before: socket.sendmsg and gethostbyaddr/getnameinfo were not watched and went out.
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        pytest.raises(PermissionError, match="network guard"),
    ):
        sock.sendmsg([b"x"], [], 0, ("192.0.2.1", 9))
    with pytest.raises(PermissionError, match="network guard"):
        socket.gethostbyaddr("192.0.2.1")
    with pytest.raises(PermissionError, match="network guard"):
        socket.getnameinfo(("192.0.2.1", 80), 0)
    offences = [(o["event"], o["host"]) for o in netguard.take()]
    assert offences == [
        ("socket.sendmsg", "192.0.2.1"),
        ("socket.gethostbyaddr", "192.0.2.1"),
        ("socket.getnameinfo", "192.0.2.1"),
    ]


def test_loopback_is_allowed(netguard: Offences) -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        socket.getaddrinfo(host, 80)
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname(), timeout=1):
        pass
    assert netguard.take() == []


def test_python_subprocesses_are_guarded_too(netguard: Offences) -> None:
    code = f"import urllib.request; urllib.request.urlopen({DEFAULT_METADATA_URL!r}, timeout=1)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert result.returncode != 0
    assert b"network guard" in result.stderr
    (offence,) = netguard.take()
    assert offence["host"] == "169.254.169.254"
    assert offence["argv"] == ["-c"]
    assert urllib.request  # the in-process import above is the subprocess's, not ours


def test_a_session_in_an_already_guarded_process_records_in_its_own_directory(
    tmp_path: Path,
) -> None:
    # A pytest-xdist worker inherits the controller's guard (sitecustomize installs it at start,
    # recording in the controller's directory), then its own session installs the guard for its
    # directory. Before: the inherited hook refused first, so the worker's directory stayed empty
    # and its tests could not see an offence.
    inherited, own = tmp_path / "controller", tmp_path / "worker"
    inherited.mkdir()
    own.mkdir()
    code = (
        "import socket\n"
        "from tests.support.netguard import _load_guard\n"
        f"_load_guard().install({str(own)!r})\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 9), timeout=0.1)\n"
        "except PermissionError:\n"
        "    pass\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SITE_DIR), os.getcwd()]),
        _load_guard().ENV: str(inherited),
    }
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert list(inherited.iterdir()) == []
    (report,) = own.iterdir()
    assert '"host": "192.0.2.1"' in report.read_text()


@pytest.mark.azurite
@pytest.mark.subprocess
@pytest.mark.parametrize("scheduled_events", [False, True], ids=["default", "opted-in"])
async def test_a_default_worker_never_probes_the_metadata_address(
    netguard: Offences, storage_env: dict[str, str], tmp_path: Path, scheduled_events: bool
) -> None:
    # Before: every worker start sent a request to 169.254.169.254. Now only an opted-in one
    # does (the positive control shows the guard sees the worker's requests).
    env = {"DAGQ_WORKER_METADATA_URL": DEFAULT_METADATA_URL}
    if scheduled_events:
        env["DAGQ_WORKER_SCHEDULED_EVENTS"] = "true"
    log = tmp_path / "agent.log"
    agent = await start_agent(storage_env, tmp_path / "w", "cpu", log=log, **env)
    offences: list[dict[str, object]] = []
    try:
        # Generous bounds, not timings: a loaded machine may take many seconds to start an agent;
        # the opted-in agent's probe is waited for, the default agent gets a moment to misbehave.
        deadline = time.monotonic() + 60
        for _ in range(1200):
            if "worker started" in log.read_text() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert "worker started" in log.read_text(), log.read_text()
        settle = time.monotonic() + (60 if scheduled_events else 0.5)
        while time.monotonic() < settle:
            offences += netguard.take()
            if offences and scheduled_events:
                break
            await asyncio.sleep(0.05)
    finally:
        agent.terminate()
        await agent.wait()
    hosts = {offence["host"] for offence in offences + netguard.take()}
    assert hosts == ({"169.254.169.254"} if scheduled_events else set()), log.read_text()


def _launch(*argv: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path if path is not None else os.environ["PATH"]}
    command = [sys.executable, "-m", "tests.support.netns", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


NON_PYTHON_PROBE = ("/bin/sh", "-c", 'echo "$DAGQ_TEST_NETNS"; /bin/cat /proc/net/dev')


@pytest.mark.skipif(netns.unshare_command() is None, reason="no network namespaces here")
def test_the_namespace_leaves_every_process_only_loopback() -> None:
    # Non-Python processes (a shell here, Azurite, a task's binaries) escape the audit hook; in
    # the namespace make test uses they have no interface but loopback, which is up.
    result = _launch(*NON_PYTHON_PROBE)
    assert result.returncode == 0, result.stderr
    flag, _, _, *interfaces = result.stdout.splitlines()
    assert flag == "1"
    assert [line.split(":")[0].strip() for line in interfaces] == ["lo"]
    code = "import socket; s = socket.create_server(('127.0.0.1', 0)); print(s.getsockname()[1])"
    assert _launch(sys.executable, "-c", code).returncode == 0


def test_without_unshare_the_suite_runs_as_it_is_and_says_so(tmp_path: Path) -> None:
    result = _launch(*NON_PYTHON_PROBE, path=str(tmp_path))  # no unshare on this PATH
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "0"
    assert "running without one" in result.stderr
