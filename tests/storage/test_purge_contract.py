"""Contract tests of the storage operations purge uses: every test runs against the memory fakes
AND Azurite."""

from __future__ import annotations

import pytest

from shared.errors import NotFoundError, StaleStateError
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from shared.storage.ports import IndexRow, PurgeMark, Storage


async def test_deleting_a_workflows_blobs_is_idempotent(storage: Storage) -> None:
    await storage.workflows.create_definition("wf1", b"def")
    await storage.workflows.create_state("wf1", b"state", {"status": "completed"})
    await storage.workflows.create_definition("wf2", b"other")
    await storage.workflows.delete("wf1")
    await storage.workflows.delete("wf1")
    await storage.workflows.delete("never")
    with pytest.raises(NotFoundError):
        await storage.workflows.read_state("wf1")
    with pytest.raises(NotFoundError):
        await storage.workflows.read_definition("wf1")
    assert await storage.workflows.read_definition("wf2") == b"other"


async def test_a_conditional_delete_spares_a_state_that_changed(storage: Storage) -> None:
    await storage.workflows.create_definition("wf1", b"def")
    first = await storage.workflows.create_state("wf1", b"state", {"status": "failed"})
    assert await storage.workflows.state_properties("wf1") == ({"status": "failed"}, first)
    await storage.workflows.write_state("wf1", b"again", first, {"status": "running"})
    with pytest.raises(StaleStateError):
        await storage.workflows.delete("wf1", first)
    assert (await storage.workflows.read_state("wf1")).data == b"again"
    assert await storage.workflows.read_definition("wf1") == b"def"
    _, current = await storage.workflows.state_properties("wf1")
    await storage.workflows.delete("wf1", current)
    with pytest.raises(NotFoundError):
        await storage.workflows.read_state("wf1")
    await storage.workflows.delete("wf1", current)  # gone: no error


async def test_purge_marks_round_trip(storage: Storage) -> None:
    assert await storage.workflows.purge_marks() == {}
    first, second = PurgeMark(1234.5, 77, True), PurgeMark(99.0)
    await storage.workflows.mark_purge("wf1", first)
    await storage.workflows.mark_purge("wf2", second)
    await storage.workflows.mark_purge("wf1", first)  # again: harmless
    assert await storage.workflows.purge_marks() == {"wf1": first, "wf2": second}
    assert first.blob_incarnation == 77
    assert second.blob_incarnation is None
    assert len(await storage.workflows.purge_marks(limit=1)) == 1
    await storage.workflows.unmark_purge("wf1")
    await storage.workflows.unmark_purge("wf1")
    assert await storage.workflows.purge_marks() == {"wf2": second}


async def test_a_marker_written_before_markers_kept_the_incarnation_is_read(
    storage: Storage,
) -> None:
    """A marker of an earlier dagq holds the creation time only: the flat layout, no
    incarnation."""
    name = ResourceNames.purge_marker_blob("wf-old")
    blobs = storage.workflows
    if isinstance(storage, MemoryStorage):
        storage.workflows.container.put(name, b'{"created_at": 12.5}')  # type: ignore[attr-defined]
    else:
        await blobs.container.upload_blob(name, b'{"created_at": 12.5}')  # type: ignore[attr-defined]
    assert await blobs.purge_marks() == {"wf-old": PurgeMark(12.5, None, False)}


async def test_markers_are_not_workflows(storage: Storage) -> None:
    await storage.workflows.mark_purge("wf1", PurgeMark(1.0))
    with pytest.raises(NotFoundError):
        await storage.workflows.read_state("wf1")


async def test_delete_prefix_with_segments_deletes_the_flat_layout_only(storage: Storage) -> None:
    flat = [ResourceNames.output_blob("wf1", "a", 1), ResourceNames.claim_blob("wf1", "b", 2, 5)]
    scoped = [
        ResourceNames.output_blob("wf1", "a", 1, 5),
        ResourceNames.claim_blob("wf1", "a", 1, 6, flat=False),
    ]
    for name in flat + scoped:
        await storage.outputs.put(name, b"x")
    prefix = ResourceNames.outputs_prefix("wf1")
    assert await storage.outputs.delete_prefix(prefix, segments=ResourceNames.FLAT_SEGMENTS) == 2
    for name in scoped:
        assert await storage.outputs.get(name) == b"x"
    assert await storage.outputs.delete_prefix(ResourceNames.outputs_prefix("wf1", 5)) == 1
    assert await storage.outputs.get(scoped[1]) == b"x"


async def test_delete_prefix_deletes_one_workflows_outputs_only(storage: Storage) -> None:
    names = [
        ResourceNames.output_blob("wf1", "a", 1),
        ResourceNames.log_blob("wf1", "a", 1),
        "wf1/b/2/claim",
        ResourceNames.log_blob("wf10", "a", 1),
    ]
    for name in names:
        await storage.outputs.put(name, b"x")
    assert await storage.outputs.delete_prefix("wf1/") == 3
    assert await storage.outputs.delete_prefix("wf1/") == 0
    assert await storage.outputs.get(ResourceNames.log_blob("wf10", "a", 1)) == b"x"
    with pytest.raises(NotFoundError):
        await storage.outputs.get(ResourceNames.log_blob("wf1", "a", 1))


def row(workflow_id: str, created_at: float) -> IndexRow:
    return IndexRow(
        workflow_id, "demo", WorkflowStatus.COMPLETED, created_at=created_at, updated_at=created_at
    )


async def test_index_delete_is_idempotent(storage: Storage) -> None:
    await storage.index.create(row("wf1", 100.0))
    await storage.index.delete("wf1", 100.0)
    await storage.index.delete("wf1", 100.0)
    assert await storage.index.get("wf1", 100.0) is None
    assert (await storage.index.list()).rows == []


async def test_created_before_pages_through_the_old_rows_only(storage: Storage) -> None:
    for i in range(7):
        await storage.index.create(row(f"old{i}", 1000.0 + i))
    await storage.index.create(row("new", 5000.0))
    seen: list[str] = []
    token: str | None = None
    for _ in range(10):
        page = await storage.index.created_before(2000.0, limit=3, continuation=token)
        assert len(page.rows) <= 3
        seen += [r.workflow_id for r in page.rows]
        token = page.next
        if token is None:
            break
    assert seen == [f"old{i}" for i in reversed(range(7))]  # newest first
    assert (await storage.index.created_before(500.0)).rows == []


@pytest.mark.parametrize("before", [-1.6e308, -1.0, 1e13, 1.6e308])
async def test_created_before_any_finite_time_is_an_answer(storage: Storage, before: float) -> None:
    # Found by fuzzing the API: POST /api/purge?older_than_s=1.6e308 answered 500 (the cutoff
    # `now - older_than_s` overflowed the RowKey computation).
    await storage.index.create(row("wf1", 1000.0))
    ids = [r.workflow_id for r in (await storage.index.created_before(before)).rows]
    assert ids == ([] if before < 1000.0 else ["wf1"])


async def test_a_definition_is_written_as_an_incarnations_and_deleted_only_while_it_is(
    storage: Storage,
) -> None:
    """Issue 30 (simulation seeds 2136, 5168): a definition blob says whose it is, a purge deletes
    it only at the ETag it read that with, and a re-submit can make it its own."""
    workflows = storage.workflows
    assert await workflows.create_definition("wf1", b"def", 7)
    assert not await workflows.create_definition("wf1", b"def", 8)
    incarnation, etag = await workflows.definition_properties("wf1")
    assert incarnation == 7
    await workflows.write_definition("wf1", b"def", 8)  # a re-submit makes it its own
    claimed, current = await workflows.definition_properties("wf1")
    assert (claimed, await workflows.read_definition("wf1")) == (8, b"def")
    assert not await workflows.delete_definition("wf1", etag)  # 7's ETag: it stays
    assert await workflows.read_definition("wf1") == b"def"
    assert await workflows.delete_definition("wf1", current)
    with pytest.raises(NotFoundError):
        await workflows.definition_properties("wf1")
    assert not await workflows.delete_definition("wf1", current)  # gone: no error
    await workflows.write_definition("wf1", b"def", 9)  # written again after a purge's delete
    assert (await workflows.definition_properties("wf1"))[0] == 9
    assert await workflows.create_definition("wf2", b"old")  # as a dagq from before wrote it
    assert (await workflows.definition_properties("wf2"))[0] is None


async def test_a_state_is_deleted_without_its_definition(storage: Storage) -> None:
    await storage.workflows.create_definition("wf1", b"def", 1)
    etag = await storage.workflows.create_state("wf1", b"state", {"status": "completed"})
    await storage.workflows.delete("wf1", etag, definition=False)
    with pytest.raises(NotFoundError):
        await storage.workflows.read_state("wf1")
    assert await storage.workflows.read_definition("wf1") == b"def"
