"""The suite's network guard works (tests/support/netguard.py), and with it the worker's default
configuration contacts nothing but loopback: no probe of the instance metadata address."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.support.netguard import Offences
from tests.worker.conftest import start_agent
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
    try:
        for _ in range(100):
            if "worker started" in log.read_text():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
    finally:
        agent.terminate()
        await agent.wait()
    hosts = {offence["host"] for offence in netguard.take()}
    assert hosts == ({"169.254.169.254"} if scheduled_events else set()), log.read_text()
