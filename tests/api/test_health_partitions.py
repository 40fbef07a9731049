"""``GET /api/health`` on a deployment of three partitions reports each partition's event queue,
poison queue and lease, and keeps its top-level fields meaning partition 0 (older clients)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from devtools.azurite import Azurite
from devtools.testing.api_host import HostProcess, start_host
from shared.settings import Settings
from shared.storage.factory import open_storage

pytestmark = pytest.mark.azurite


@pytest.fixture(scope="module")
def host_env(azurite: Azurite) -> dict[str, str]:
    return {
        "DAGQ_STORAGE": azurite.connection_string,
        "DAGQ_PREFIX": "h" + uuid.uuid4().hex[:12],
        "DAGQ_PARTITIONS": "3",
    }


@pytest.fixture(scope="module")
def host(
    host_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """HTTP functions only: no coordinator consumes the events put on the queues here."""
    log_path = Path(tmp_path_factory.mktemp("host")) / "host.log"
    process = start_host(host_env, log_path, extra_args=("--no-queues", "--no-timers"))
    try:
        yield process
    finally:
        assert process.stop() == 0, process.log()


async def test_health_reports_every_partition(host: HostProcess, host_env: dict[str, str]) -> None:
    settings = Settings.model_validate(host_env)
    names = settings.names
    async with httpx.AsyncClient(base_url=host.url, timeout=10) as http:
        first = await http.get("/health")  # the app creates every partition's queues first
        assert first.status_code == 200, first.text
        async with open_storage(settings) as storage:
            queue = storage.for_partition(2).event_queue
            for n in range(3):
                await queue.send(f'{{"n": {n}}}')
        body = (await http.get("/health")).json()
    partitions = body["partitions"]
    assert [p["partition"] for p in partitions] == [0, 1, 2]
    assert [p["event_queue"]["name"] for p in partitions] == [
        names.partition_event_queue(p) for p in range(3)
    ]
    assert [p["poison_queue"]["name"] for p in partitions] == [
        names.partition_poison_queue(p) for p in range(3)
    ]
    assert [p["event_queue"]["depth"] for p in partitions] == [0, 0, 3]
    assert not any(p["lease_held"] for p in partitions)
    # The top-level fields are partition 0's, as before partitions existed.
    assert body["event_queue"] == partitions[0]["event_queue"]
    assert body["poison_queue"] == partitions[0]["poison_queue"]
    assert body["coordinator"] == {"lease_held": False}
