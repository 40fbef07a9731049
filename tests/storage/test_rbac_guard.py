"""The permission layer refuses what Azure would refuse, on memory storage and on Azurite alike:
each identity gets what infra/'s role assignments give it (shared/storage/rbac/model.json), and a
refusal has the Azure SDK's shape (HttpResponseError, 403, AuthorizationPermissionMismatch), is
raised before the call reaches storage, and is recorded with who, what and where."""

from __future__ import annotations

import inspect

import pytest
from azure.core.exceptions import HttpResponseError

from shared.names import ResourceNames
from shared.storage import ports
from shared.storage.ports import Storage
from shared.storage.rbac.guard import guarded
from shared.storage.rbac.operations import OPERATIONS
from shared.storage.rbac.usage import UsageLog

PORTS = ports.PORTS


@pytest.mark.parametrize("port", sorted(PORTS))
def test_every_storage_method_of_every_port_is_checked(port: str) -> None:
    methods = {
        name
        for name, member in vars(PORTS[port]).items()
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    }
    assert methods == set(OPERATIONS[port]), port  # type: ignore[index]


async def refused(call: object) -> HttpResponseError:
    with pytest.raises(HttpResponseError) as caught:
        await call  # type: ignore[misc]
    return caught.value


async def test_a_worker_reads_state_metadata(storage: Storage, prefix: str) -> None:
    names = ResourceNames(prefix)
    await storage.workflows.create_definition("wf-1", b"{}")
    await storage.workflows.create_state("wf-1", b"{}", {"status": "running"})
    usage = UsageLog()
    worker = guarded(storage, "worker", names, usage=usage)

    assert (await worker.workflows.state_metadata("wf-1"))["status"] == "running"
    error = await refused(worker.workflows.read_definition("wf-1"))
    assert (error.status_code, error.error_code) == (403, "AuthorizationPermissionMismatch")
    assert "This request is not authorized" in str(error)
    assert f"container {prefix}-workflows, blob 'wf-1.def'" in str(error)
    assert "identity 'worker' may not Get Blob (workflows.read_definition)" in str(error)
    # Read-only, even on state blobs: no write reaches storage.
    stored = await storage.workflows.read_state("wf-1")
    await refused(worker.workflows.write_state("wf-1", b"[]", stored.etag, {}))
    assert (await storage.workflows.read_state("wf-1")).data == b"{}"
    [refusal, write] = usage.refusals
    assert refusal.caller == f"{__name__}:{test_a_worker_reads_state_metadata.__name__}"
    assert write.call == "workflows.write_state"


async def test_a_worker_reaches_no_index_row_and_no_poison_queue(
    storage: Storage, prefix: str
) -> None:
    worker = guarded(storage, "worker", ResourceNames(prefix))
    await refused(worker.index.list())
    await refused(worker.event_poison_queue.send("x"))
    await refused(worker.cache.get("0" * 64))
    await worker.event_queue.send("a completion")  # Message Sender on the event queues
    await refused(worker.event_queue.receive(1, 5))  # ... and nothing more
    assert [m.text for m in await storage.event_queue.receive(1, 5)] == ["a completion"]


async def test_only_the_app_reaches_the_schedules(storage: Storage, prefix: str) -> None:
    from shared.storage.schedules import ScheduleRecord, ScheduleSpec

    app = guarded(storage, "app", ResourceNames(prefix))
    spec = ScheduleSpec(name="nightly", cron="0 2 * * *", definition="name: n\n")
    assert await app.schedules.create(ScheduleRecord(spec=spec, created_at=1.0, not_before=1.0))
    assert [r.name for r in await app.schedules.list()] == ["nightly"]
    worker = guarded(storage, "worker", ResourceNames(prefix))
    await refused(worker.schedules.list())
    await refused(worker.schedules.get("nightly"))
    await refused(worker.schedules.delete("nightly"))


async def test_the_app_uses_the_result_cache(storage: Storage, prefix: str) -> None:
    app = guarded(storage, "app", ResourceNames(prefix))
    await app.cache.put("a" * 64, b"entry", 4e9)
    assert await app.cache.get("a" * 64) == b"entry"


async def test_an_unknown_identity_may_do_nothing(storage: Storage, prefix: str) -> None:
    stranger = guarded(storage, "nobody", ResourceNames(prefix))
    await refused(stranger.workflows.state_metadata("wf-1"))


async def test_a_partition_view_stays_guarded(storage: Storage, prefix: str) -> None:
    worker = guarded(storage, "worker", ResourceNames(prefix)).for_partition(1)
    await refused(worker.lease.acquire(15))
    await refused(worker.event_queue.receive(1, 5))
