"""Contract tests of the registry port: every test runs against the memory fake AND Azurite."""

from __future__ import annotations

import time

import pytest

from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.azure import AzureStorage
from shared.storage.ports import IndexRow, Storage
from shared.storage.registry import WorkerRecord, WorkerTask


def record(worker_id: str = "vm-1-4242", **changes: object) -> WorkerRecord:
    base = WorkerRecord(
        worker_id=worker_id,
        host="vm-1",
        queues=["gpu", "cpu"],
        slots=2,
        busy_slots=1,
        tasks=[WorkerTask("wf-1", "train.lr=0.2", 3), WorkerTask("wf-2", "a", 1, incarnation=7)],
        version="0.1.0",
        started_at=1000.0,
        last_seen=1010.5,
        interval_s=20.0,
        busy_s=12.5,
    )
    return WorkerRecord(**{**base.__dict__, **changes})  # type: ignore[arg-type]


async def test_a_beat_is_read_back_with_the_service_time(storage: Storage) -> None:
    before = time.time()
    await storage.registry.beat(record())
    [got] = await storage.registry.workers()
    assert got == record()  # every field as written (server_seen is not compared)
    assert got.tasks == [
        WorkerTask("wf-1", "train.lr=0.2", 3),
        WorkerTask("wf-2", "a", 1, incarnation=7),
    ]
    assert got.server_seen is not None
    assert got.server_seen >= before - 5  # the service's clock, near ours


async def test_a_later_beat_replaces_the_record(storage: Storage) -> None:
    await storage.registry.beat(record())
    await storage.registry.beat(record(busy_slots=0, tasks=[], last_seen=1030.0))
    [got] = await storage.registry.workers()
    assert (got.busy_slots, got.tasks, got.last_seen) == (0, [], 1030.0)


async def test_remove_is_idempotent_and_leaves_others(storage: Storage) -> None:
    await storage.registry.beat(record("a"))
    await storage.registry.beat(record("b"))
    await storage.registry.remove("a")
    await storage.registry.remove("a")
    await storage.registry.remove("never-there")
    assert [r.worker_id for r in await storage.registry.workers()] == ["b"]


async def test_worker_ids_with_awkward_characters_round_trip(storage: Storage) -> None:
    awkward = "pod/gpu#1?x\\y%20 ü"
    await storage.registry.beat(record(awkward))
    [got] = await storage.registry.workers()
    assert got.worker_id == awkward
    await storage.registry.remove(awkward)
    assert await storage.registry.workers() == []


async def test_queues_and_job_marks_are_kept(storage: Storage) -> None:
    assert await storage.registry.queues() == {}
    assert await storage.workflows.job_marks() == {}
    await storage.registry.note_queues(["gpu", "cpu"], 100.0)
    await storage.registry.note_queues(["gpu"], 200.0)
    await storage.workflows.mark_job("sweep", 150.0)
    await storage.workflows.mark_job("sweep", 160.0)
    await storage.workflows.mark_job("sweep-p1", 170.0)
    assert await storage.registry.queues() == {"gpu": 200.0, "cpu": 100.0}
    assert await storage.workflows.job_marks() == {"sweep": 160.0, "sweep-p1": 170.0}


async def test_the_registry_never_shows_in_the_workflow_index(storage: Storage) -> None:
    await storage.registry.beat(record())
    await storage.registry.note_queues(["gpu"], 1.0)
    await storage.workflows.mark_job("sweep", 1.0)
    row = IndexRow("wf-1", "demo", WorkflowStatus.RUNNING, created_at=5.0, updated_at=5.0)
    await storage.index.create(row)
    assert [r.workflow_id for r in (await storage.index.list()).rows] == ["wf-1"]
    assert [r.workflow_id for r in await storage.index.active()] == ["wf-1"]


async def _raw_entity(storage: AzureStorage, table: str, entity: dict[str, object]) -> None:
    """Write a row as a forger with table access could (Azurite only)."""
    await storage.clients.table.get_table_client(table).upsert_entity(entity)


@pytest.mark.azurite
async def test_registry_rows_live_in_a_table_the_index_does_not_share(
    azure_storage: AzureStorage,
) -> None:
    # Before: worker rows sat in the index table, so the workers' role (Table Data Contributor on
    # that table) could set CancelRequested on, or delete, any workflow's row.
    storage = azure_storage
    names = storage.names
    assert names.registry_table != names.index_table
    await storage.registry.beat(record())
    index = storage.clients.table.get_table_client(names.index_table)
    assert [e async for e in index.list_entities()] == []


@pytest.mark.azurite
async def test_an_unreadable_row_is_skipped_not_fatal(azure_storage: AzureStorage) -> None:
    # Before: one bad workflow row made index.active() raise (sweeps stopped for the partition)
    # and one bad registry row made GET /api/workers and /api/doctor answer 500.
    storage = azure_storage
    names = storage.names
    await storage.index.create(
        IndexRow("wf-1", "demo", WorkflowStatus.RUNNING, created_at=5.0, updated_at=5.0)
    )
    bad_row = {"PartitionKey": "wf", "RowKey": "0bad", "Status": "running", "Name": 1}
    await _raw_entity(storage, names.index_table, bad_row)
    await storage.registry.beat(record())
    forged = {"PartitionKey": "worker", "RowKey": "forged", "Tasks": "{not json"}
    await _raw_entity(storage, names.registry_table, forged)
    forged_mark = {"PartitionKey": "mark", "RowKey": "sweep", "At": 9e12}
    await _raw_entity(storage, names.registry_table, forged_mark)
    assert [r.workflow_id for r in await storage.index.active()] == ["wf-1"]
    assert [r.workflow_id for r in (await storage.index.list()).rows] == ["wf-1"]
    assert [w.worker_id for w in await storage.registry.workers()] == ["vm-1-4242"]
    # A worker may write the registry table: a mark forged there is no mark (they are kept
    # where only the app writes), so doctor never reports stopped sweeps as running.
    assert await storage.workflows.job_marks() == {}


async def test_failure_notes_are_kept_one_per_source_and_kind(storage: Storage) -> None:
    from shared.storage.registry import FailureNote

    await storage.registry.note_failure(FailureNote("app", "cache record", 1, "403 X", 10.0))
    await storage.registry.note_failure(FailureNote("app", "cache record", 7, "403 Y", 20.0))
    await storage.registry.note_failure(FailureNote("worker w|1", "log append", 2, "x" * 999, 5))
    notes = sorted(await storage.registry.failures(), key=lambda n: n.source)
    assert [(n.source, n.kind, n.count, n.at) for n in notes] == [
        ("app", "cache record", 7, 20.0),
        ("worker w|1", "log append", 2, 5.0),
    ]
    assert notes[0].detail == "403 Y"
    assert len(notes[1].detail) == 200  # bounded


async def test_an_unreadable_failure_note_is_skipped(azure_storage: AzureStorage) -> None:
    forged = {"PartitionKey": "failure", "RowKey": "x", "Source": "w", "Kind": "k", "Count": 1e999}
    await _raw_entity(azure_storage, azure_storage.names.registry_table, forged)
    assert await azure_storage.registry.failures() == []


async def test_an_unreadable_job_mark_is_skipped(storage: Storage) -> None:
    await storage.workflows.mark_job("sweep", 5.0)
    await storage.outputs.put("x", b"")  # (the outputs container is not where marks live)
    names: ResourceNames = storage.names  # type: ignore[attr-defined]  # both backends have it
    del names
    with pytest.raises(ValueError, match="invalid job name"):
        await storage.workflows.mark_job("../evil", 1.0)
    assert await storage.workflows.job_marks() == {"sweep": 5.0}


async def test_a_forged_stale_row_is_forgotten_by_its_own_key(azure_storage: AzureStorage) -> None:
    # Before: an over-long WorkerId made removing the stale row raise (GET /api/workers answered
    # 503 for good), and a row whose key was not its id's was "removed" by the wrong key on
    # every read.
    from shared.ops.workers import list_workers

    storage = azure_storage
    table = storage.names.registry_table
    for key, worker_id in (("forged-1", "w" * 1100), ("forged-2", "another-id")):
        row = {"PartitionKey": "worker", "RowKey": key, "WorkerId": worker_id, "LastSeen": 1.0}
        await _raw_entity(storage, table, row)
    assert len(await storage.registry.workers()) == 2
    later = time.time() + 7200  # both rows unrefreshed for longer than forget_after_s
    view = await list_workers(storage, now=later, lost_after_s=90, forget_after_s=3600)
    assert view.workers == []
    assert await storage.registry.workers() == []


async def test_registry_reads_are_bounded_in_bytes(
    azure_storage: AzureStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: every column of every row was read (forged 1 MiB rows meant gigabytes a day of
    # GET /api/workers), with no bound but the row count.
    from shared.storage.azure import registry as azure_registry

    storage = azure_storage
    table = storage.names.registry_table
    junk = {"PartitionKey": "worker", "RowKey": "junk", "WorkerId": "junk", "Junk": "x" * 30_000}
    await _raw_entity(storage, table, junk)
    [entity] = await storage.registry._partition("worker")  # type: ignore[attr-defined]
    assert "Junk" not in entity  # the service sent the known columns only
    for i in range(5):
        row = {"PartitionKey": "worker", "RowKey": f"w{i}", "WorkerId": f"w{i}", "Host": "h" * 400}
        await _raw_entity(storage, table, row)
    monkeypatch.setattr(azure_registry, "MAX_REGISTRY_READ_BYTES", 1000)
    kept = await storage.registry._partition("worker")  # type: ignore[attr-defined]
    assert 1 <= len(kept) <= 3


def test_a_read_selects_every_column_a_beat_writes() -> None:
    # The Incarnations column, added to the beat, was first missing from the read's columns.
    from shared.storage.azure.registry import COLUMNS, to_entity

    written = set(to_entity(record())) - {"PartitionKey"}
    assert written <= set(COLUMNS["worker"])
