"""The rule for repeating a storage call whose connection was lost (``shared.storage.repeat``),
per operation, on the memory fakes and on Azurite: a repeat of a call that took effect answers as
the first try would have. (``test_connection_loss.py`` shows the same on real lost connections.)
"""

from __future__ import annotations

import inspect

import pytest

from shared.errors import ConflictError, StaleStateError
from shared.states import WorkflowStatus
from shared.storage import azure as azure_adapters
from shared.storage import ports
from shared.storage.azure.cache import AzureResultCache
from shared.storage.azure.schedules import AzureSchedules
from shared.storage.ports import IndexRow, Storage
from shared.storage.repeat import REPEATED, repeating, with_repeats

PORTS = ports.PORTS
ADAPTERS = {
    "workflows": azure_adapters.AzureWorkflowBlobs,
    "outputs": azure_adapters.AzureOutputBlobs,
    "cache": AzureResultCache,
    "deadletters": azure_adapters.AzureDeadLetters,
    "lease": azure_adapters.AzureLease,
    "queue": azure_adapters.AzureQueue,
    "queues": azure_adapters.AzureQueues,
    "index": azure_adapters.AzureIndex,
    "registry": azure_adapters.AzureRegistry,
    "schedules": AzureSchedules,
}


def operations() -> set[str]:
    return {
        f"{port}.{name}"
        for port, protocol in PORTS.items()
        for name, member in vars(protocol).items()
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    }


def test_every_operation_has_a_rule() -> None:
    """A new port operation must say why repeating it is safe (or be made safe) first."""
    assert set(REPEATED) == operations()


def test_every_azure_operation_is_repeated() -> None:
    for operation in sorted(operations()):
        port, name = operation.split(".")
        method = getattr(ADAPTERS[port], name)
        assert getattr(method, "__dagq_repeated__", False), (
            f"{operation} is not repeated after a lost connection"
        )


async def test_a_repeated_create_that_took_effect_created(storage: Storage) -> None:
    assert await storage.workflows.create_definition("wf1", b"d") is True
    with repeating():
        assert await storage.workflows.create_definition("wf1", b"d") is True
        assert await storage.workflows.create_definition("wf1", b"other") is False

    etag = await storage.workflows.create_state("wf1", b"s", {"status": "pending"})
    with repeating():
        assert await storage.workflows.create_state("wf1", b"s", {"status": "pending"}) == etag
        with pytest.raises(ConflictError):  # another submit's state (another incarnation)
            await storage.workflows.create_state("wf1", b"t", {"status": "pending"})
        with pytest.raises(ConflictError):
            await storage.workflows.create_state("wf1", b"s", {"status": "running"})

    assert await storage.outputs.create_if_absent("wf1/a/1/claim", b"worker-a") is True
    with repeating():  # the worker's own claim, not another's
        assert await storage.outputs.create_if_absent("wf1/a/1/claim", b"worker-a") is True
        assert await storage.outputs.create_if_absent("wf1/a/1/claim", b"worker-b") is False


async def test_a_repeated_cas_write_that_took_effect_wrote(storage: Storage) -> None:
    etag1 = await storage.workflows.create_state("wf1", b"s1", {"status": "pending"})
    etag2 = await storage.workflows.write_state("wf1", b"s2", etag1, {"status": "running"})
    with repeating():
        assert await storage.workflows.write_state("wf1", b"s2", etag1, {"status": "running"}) == (
            etag2
        )
        with pytest.raises(StaleStateError):  # not what this write wrote: re-read and re-apply
            await storage.workflows.write_state("wf1", b"s3", etag1, {"status": "running"})
    assert await storage.workflows.read_state("wf1") == (b"s2", etag2, {"status": "running"})


async def test_repeats_that_need_no_settling(storage: Storage) -> None:
    """Inserts, merges, deletes, sends: the second time is harmless as it is."""
    row = IndexRow("wf1", "train", WorkflowStatus.PENDING, 1000.0, 1000.0)
    await storage.index.create(row)
    await storage.index.request_cancel("wf1", 1000.0)
    with repeating():
        await storage.index.create(row)
        await storage.index.request_cancel("wf1", 1000.0)
        await storage.index.project(row)
        await storage.outputs.put("wf1/a/1/output.json", b"{}")
        await storage.outputs.put("wf1/a/1/output.json", b"{}")
    got = await storage.index.get("wf1", 1000.0)
    assert got is not None
    assert got.cancel_requested is True
    await storage.event_queue.send("m")
    received = await storage.event_queue.receive(1, 30)
    assert await storage.event_queue.delete(received[0]) is True
    with repeating():
        assert await storage.event_queue.delete(received[0]) is False  # gone: no error
        await storage.index.delete("wf1", 1000.0)
        await storage.index.delete("wf1", 1000.0)
    assert await storage.index.get("wf1", 1000.0) is None


async def test_a_repeated_acquire_that_took_the_lease_has_it(storage: Storage) -> None:
    """Every try of one acquire proposes the same lease id: the repeat renews the lease its
    first try took (else the partition would have no coordinator for a lease period)."""
    tries: list[str | None] = []

    async def acquire() -> str | None:
        tries.append(await storage.lease.acquire(15))
        if len(tries) == 1:
            raise ConnectionResetError("closed after the lease was taken")
        return tries[-1]

    lease = await with_repeats(
        acquire, lost=lambda e: isinstance(e, ConnectionResetError), what="acquire"
    )
    assert lease is not None
    assert tries == [lease, lease]
    assert await storage.lease.renew(lease) is True
    assert await storage.lease.acquire(15) is None  # another call is another holder
