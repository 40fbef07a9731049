"""The notify function under the local host (issue 29), as ``make up`` runs it: a workflow
submitted through the client with ``notify=`` (``?notify=URL``) is cancelled through the API, and
the app's own notify queue trigger POSTs the ``cancelled`` notification to a receiver on
127.0.0.1 (the local stack allows loopback and http)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import dagq
from devtools.azurite import Azurite
from devtools.testing.api_host import HostProcess, start_host
from tests.notify.receiver import receiver

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

DEFINITION = """
name: waits
tasks:
  - {name: idle, queue: nobody-serves-this, kwargs: {cmd: "true"}}
"""


@pytest.fixture(scope="module")
def host(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    env = {
        "DAGQ_STORAGE": azurite.connection_string,
        "DAGQ_PREFIX": "n" + uuid.uuid4().hex[:12],
        "DAGQ_NOTIFY_ALLOW_PRIVATE": "1",
        "DAGQ_NOTIFY_ALLOW_HTTP": "1",
        "DAGQ_PUBLIC_URL": "http://127.0.0.1:7071",
    }
    started = start_host(env, Path(tmp_path_factory.mktemp("host")) / "host.log")
    try:
        yield started
    finally:
        assert started.stop() == 0, started.log()


def test_the_host_delivers_a_cancelled_notification(host: HostProcess) -> None:
    with receiver() as hook, dagq.Client(host.url) as client:
        submitted = client.submit(DEFINITION, notify=[hook.url("/cancelled")])
        client.cancel(submitted.id)
        deadline = time.monotonic() + 60
        while not hook.requests and time.monotonic() < deadline:
            time.sleep(0.1)
    assert hook.requests, host.log()
    [request] = hook.requests
    body = json.loads(request.body)
    assert request.path == "/cancelled"
    assert body["event"] == "cancelled"
    assert body["workflow"]["id"] == submitted.id
    assert body["workflow"]["url"] == f"http://127.0.0.1:7071/api/ui#/runs/{submitted.id}"
    assert "X-Dagq-Signature" not in request.headers  # no secret: unsigned
