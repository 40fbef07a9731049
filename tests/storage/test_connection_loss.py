"""Lost connections (issue #36): a TCP proxy in front of Azurite closes connections as servers and
load balancers do, and every storage operation still succeeds, with nothing duplicated that
matters. No mock of Azure: the SDKs talk HTTP to Azurite through ``FlakyProxy``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest

from devtools.azurite import Azurite
from devtools.testing.flaky_proxy import FlakyProxy
from shared.settings import Settings, azurite_connection_string
from shared.states import WorkflowStatus
from shared.storage.azure import AzureStorage
from shared.storage.ports import IndexRow

pytestmark = pytest.mark.azurite


@dataclass
class Proxies:
    blob: FlakyProxy
    queue: FlakyProxy
    table: FlakyProxy
    key: str
    """The account key of the Azurite behind them."""

    def settings(self, prefix: str) -> Settings:
        conn = azurite_connection_string(
            blob=self.blob.port, queue=self.queue.port, table=self.table.port, key=self.key
        )
        return Settings.model_validate({"DAGQ_STORAGE": conn, "DAGQ_PREFIX": prefix})

    def all(self) -> list[FlakyProxy]:
        return [self.blob, self.queue, self.table]


@pytest.fixture
def proxies(azurite: Azurite) -> Iterator[Proxies]:
    found = Proxies(
        *(FlakyProxy("127.0.0.1", azurite.bound[s]) for s in ("blob", "queue", "table")),
        key=azurite.key,
    )
    for proxy in found.all():
        proxy.start()
    yield found
    for proxy in found.all():
        proxy.stop()


@pytest.fixture
async def proxied_storage(proxies: Proxies, prefix: str) -> AsyncIterator[AzureStorage]:
    from shared.storage.factory import ensure_resources, open_storage

    async with open_storage(proxies.settings(prefix)) as opened:
        assert isinstance(opened, AzureStorage)
        await ensure_resources(opened)
        yield opened


def row(workflow_id: str, created_at: float) -> IndexRow:
    return IndexRow(workflow_id, "train", WorkflowStatus.PENDING, created_at, created_at)


async def test_an_insert_on_a_connection_the_server_closed_succeeds(
    proxied_storage: AzureStorage, proxies: Proxies
) -> None:
    """Issue #36 as measured: the index insert on a pooled connection idle for a while, which
    the server closes as the request goes out."""
    await proxied_storage.index.create(row("wf1", 1000.0))
    proxies.table.idle_close_s = 0.3
    await asyncio.sleep(0.5)
    await proxied_storage.index.create(row("wf2", 1001.0))
    assert proxies.table.closed_before >= 1
    assert await proxied_storage.index.get("wf2", 1001.0) is not None


# -- the rule per operation: closed before the request reached Azurite, or after ----------------

WHEN = [pytest.param(False, id="closed-before"), pytest.param(True, id="closed-after")]


@pytest.mark.parametrize("after", WHEN)
async def test_create_only_blobs(
    proxied_storage: AzureStorage, proxies: Proxies, after: bool
) -> None:
    """A 409 on the repeat of a create whose first try landed is "created" (the same bytes)."""
    proxies.blob.arm(after=after)
    assert await proxied_storage.workflows.create_definition("wf1", b"def") is True
    assert (
        await proxied_storage.workflows.create_definition("wf1", b"def") is False
    )  # a real second
    proxies.blob.arm(after=after)
    etag = await proxied_storage.workflows.create_state("wf1", b"s1", {"status": "pending"})
    assert (await proxied_storage.workflows.read_state("wf1")).etag == etag
    proxies.blob.arm(after=after)
    assert await proxied_storage.outputs.create_if_absent("wf1/a/1/claim", b"worker-a") is True
    assert await proxied_storage.outputs.create_if_absent("wf1/a/1/claim", b"worker-b") is False
    assert proxies.blob.closed_before + proxies.blob.closed_after == 3


@pytest.mark.parametrize("after", WHEN)
async def test_state_cas_write(
    proxied_storage: AzureStorage, proxies: Proxies, after: bool
) -> None:
    """A 412 on the repeat of a write whose first try landed returns that write's ETag; a
    stale writer still loses."""
    etag1 = await proxied_storage.workflows.create_state("wf1", b"s1", {"status": "pending"})
    proxies.blob.arm(after=after)
    etag2 = await proxied_storage.workflows.write_state("wf1", b"s2", etag1, {"status": "running"})
    assert await proxied_storage.workflows.read_state("wf1") == (
        b"s2",
        etag2,
        {"status": "running"},
    )
    proxies.blob.arm(after=after)
    from shared.errors import StaleStateError

    with pytest.raises(StaleStateError):
        await proxied_storage.workflows.write_state("wf1", b"s3", etag1, {"status": "failed"})
    assert proxies.blob.closed_before + proxies.blob.closed_after == 2


@pytest.mark.parametrize("after", WHEN)
async def test_index_rows(proxied_storage: AzureStorage, proxies: Proxies, after: bool) -> None:
    proxies.table.arm(after=after)
    await proxied_storage.index.create(row("wf1", 1000.0))
    proxies.table.arm(after=after)
    await proxied_storage.index.request_cancel("wf1", 1000.0)
    proxies.table.arm(after=after)
    await proxied_storage.index.project(
        IndexRow("wf1", "train", WorkflowStatus.RUNNING, 1000.0, 1001.0)
    )
    got = await proxied_storage.index.get("wf1", 1000.0)
    assert got is not None
    assert (got.status, got.cancel_requested) == (WorkflowStatus.RUNNING, True)
    assert proxies.table.closed_before + proxies.table.closed_after == 3


@pytest.mark.parametrize("after", WHEN)
async def test_queue_send_receive_delete(
    proxied_storage: AzureStorage, proxies: Proxies, after: bool
) -> None:
    """A repeated send may deliver twice (claims drop the duplicate); nothing is lost."""
    queue = proxied_storage.event_queue
    proxies.queue.arm(after=after)
    await queue.send("m")
    got = await queue.receive(32, 30)
    assert [m.text for m in got] == ["m"] * (2 if after else 1)
    proxies.queue.arm(after=after)
    assert await queue.delete(got[0]) is not after  # a repeat finds it gone
    for message in got[1:]:
        assert await queue.delete(message) is True
    assert await queue.approximate_count() == 0


@pytest.mark.parametrize("after", WHEN)
async def test_lease_acquire(proxied_storage: AzureStorage, proxies: Proxies, after: bool) -> None:
    """A repeated acquire proposes the same lease id: the lease it returns is held and ours."""
    proxies.blob.arm(after=after)
    lease = await proxied_storage.lease.acquire(15)
    assert lease is not None
    assert await proxied_storage.lease.renew(lease) is True
    assert await proxied_storage.lease.acquire(15) is None
    proxies.blob.arm(after=after)
    await proxied_storage.lease.release(lease)
    assert await proxied_storage.lease.is_held() is False


async def test_idle_connections_everywhere(proxied_storage: AzureStorage, proxies: Proxies) -> None:
    """Every service's pooled connections are closed by the server after 0.3 s idle, as the
    request goes out: blobs, queues and tables all repeat."""
    await proxied_storage.workflows.create_definition("wf1", b"d")
    await proxied_storage.event_queue.send("warm")
    await proxied_storage.index.create(row("wf0", 999.0))
    for proxy in proxies.all():
        proxy.idle_close_s = 0.3
    await asyncio.sleep(0.5)
    assert await proxied_storage.workflows.create_state("wf1", b"s", {}) is not None
    await proxied_storage.event_queue.send("m")
    await proxied_storage.index.create(row("wf1", 1000.0))
    assert all(proxy.closed_before >= 1 for proxy in proxies.all())
