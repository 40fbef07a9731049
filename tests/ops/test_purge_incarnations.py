"""A purge deletes only the blobs of the incarnation it purges (issue #30, item 2).

Before: step 4 deleted the whole ``{id}/`` prefix of the outputs container, so an id submitted
again between steps 3 and 4 lost the new workflow's claims, outputs and logs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from shared.api import service
from shared.errors import ConflictError, NotFoundError
from shared.names import ResourceNames
from shared.ops.purge import delete_outputs, purge_many, purge_workflow
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from shared.storage.ports import PurgeMark
from tests.coordinator.helpers import FakeClock, diamond, load
from tests.ops.runs import run_to_end

DAY = 86400.0


@contextmanager
def _written(storage: MemoryStorage) -> Iterator[set[str]]:
    """The names of the outputs-container blobs written meanwhile."""
    container = storage.outputs.container  # type: ignore[attr-defined]
    put, create = container.put, container.create_if_absent
    written: set[str] = set()

    def put_(name: str, *args: Any, **kw: Any) -> Any:
        written.add(name)
        return put(name, *args, **kw)

    def create_(name: str, *args: Any, **kw: Any) -> Any:
        written.add(name)
        return create(name, *args, **kw)

    container.put, container.create_if_absent = put_, create_
    try:
        yield written
    finally:
        container.put, container.create_if_absent = put, create


def _blobs(storage: MemoryStorage) -> set[str]:
    return set(storage.outputs.container.blobs)  # type: ignore[attr-defined]


async def test_a_resubmit_between_purge_steps_3_and_4_keeps_the_new_runs_blobs() -> None:
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-r", incarnation=1)
    await run_to_end(storage, "wf-r", clock)
    delete_state = storage.workflows.delete
    new_run: set[str] = set()

    async def resubmitted_after_step_3(
        workflow_id: str, etag: str | None = None, **kw: Any
    ) -> None:
        await delete_state(workflow_id, etag, **kw)  # step 3 done; the id is free again
        clock.advance(60)
        await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-r", incarnation=2)
        with _written(storage) as written:
            await run_to_end(storage, "wf-r", clock)
        new_run.update(written)

    storage.workflows.delete = resubmitted_after_step_3  # type: ignore[method-assign]
    await purge_workflow(storage, "wf-r")
    assert len(new_run) >= 8  # 4 claims and 4 large outputs of the new run's diamond
    assert new_run <= _blobs(storage), "the purge deleted blobs of the workflow submitted since"
    assert (await load(storage, diamond(), "wf-r")).incarnation == 2
    state = await load(storage, diamond(), "wf-r")
    for ref in state.outputs.values():
        assert ref.blob is not None
        await storage.outputs.get(ref.blob)


async def test_the_purged_runs_blobs_are_all_deleted() -> None:
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-p", incarnation=5)
    await run_to_end(storage, "wf-p", clock)
    assert _blobs(storage)
    view = await purge_workflow(storage, "wf-p")
    assert view.blobs_deleted >= 8
    assert _blobs(storage) == set()
    with pytest.raises(NotFoundError):
        await purge_workflow(storage, "wf-p")


async def test_a_marked_purge_of_an_id_submitted_again_leaves_the_new_workflow_alone() -> None:
    """A purge interrupted after its state delete; the id is submitted again and finishes; the
    next bulk purge finishes the marked one. Before: it purged the new workflow (its state
    was terminal) with everything under ``{id}/``."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-m", incarnation=1)
    await run_to_end(storage, "wf-m", clock)
    created = (await load(storage, diamond(), "wf-m")).created_at
    old_blobs = _blobs(storage)
    await storage.workflows.mark_purge("wf-m", PurgeMark(created, 1, True))  # steps 1-3
    await storage.index.delete("wf-m", created)
    await storage.workflows.delete("wf-m")
    clock.advance(60)
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-m", incarnation=2)
    with _written(storage) as new_run:
        await run_to_end(storage, "wf-m", clock)
    report = await purge_many(storage, now=clock.now, older_than_s=10 * DAY)
    assert report.resumed == ["wf-m"]
    assert report.workflows == []
    state = await load(storage, diamond(), "wf-m")
    assert (state.incarnation, state.status) == (2, WorkflowStatus.COMPLETED)
    assert [row.workflow_id for row in (await storage.index.list()).rows] == ["wf-m"]
    assert _blobs(storage) == new_run
    assert not old_blobs & _blobs(storage)
    assert await storage.workflows.purge_marks() == {}


async def test_a_flat_layout_workflow_is_purged_without_its_successors_blobs() -> None:
    """A workflow whose state is from before version 6 (the flat layout): its purge deletes its
    flat names only, not a successor's under ``{id}/{incarnation}/``."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-f", incarnation=1)
    await run_to_end(storage, "wf-f", clock)
    flat = [ResourceNames.log_blob("wf-f", "a", 1), ResourceNames.claim_blob("wf-f", "a", 1, 1)]
    for name in flat:
        await storage.outputs.put(name, b"old")
    successor = ResourceNames.log_blob("wf-f", "a", 1, 9)
    await storage.outputs.put(successor, b"new")
    mark = PurgeMark(clock.now, 1, False)
    assert await delete_outputs(storage, "wf-f", mark) == 2
    assert _blobs(storage) >= {successor}
    assert not set(flat) & _blobs(storage)


async def test_a_refused_purge_finishes_the_marked_purge_of_the_ids_earlier_workflow() -> None:
    """The id holds a running workflow and a marker of its purged predecessor: the purge is
    refused (409), and the predecessor's interrupted purge is finished, its blobs with it."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-q", incarnation=1)
    await run_to_end(storage, "wf-q", clock)
    created = (await load(storage, diamond(), "wf-q")).created_at
    old_blobs = _blobs(storage)
    await storage.workflows.mark_purge("wf-q", PurgeMark(created, 1, True))  # steps 1-3
    await storage.index.delete("wf-q", created)
    await storage.workflows.delete("wf-q")
    clock.advance(60)
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-q", incarnation=2)
    with pytest.raises(ConflictError, match="is pending"):
        await purge_workflow(storage, "wf-q")
    assert not old_blobs & _blobs(storage)
    assert await storage.workflows.purge_marks() == {}
    assert [row.workflow_id for row in (await storage.index.list()).rows] == ["wf-q"]
    assert (await load(storage, diamond(), "wf-q")).incarnation == 2


async def test_finishing_a_purge_past_its_state_delete_never_deletes_a_later_workflow() -> None:
    """A purge answered 503 after its step 3 (state and definition gone); tried again, it
    finishes from the marker. Its delete used to go out without an ETag whatever: stalled, it
    landed after the id was submitted again and deleted the running successor (simulation
    seed 650). Now it deletes nothing of the workflows container when the definition is gone."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-s", incarnation=1)
    await run_to_end(storage, "wf-s", clock)
    created = (await load(storage, diamond(), "wf-s")).created_at
    await storage.workflows.mark_purge("wf-s", PurgeMark(created, 1, True))  # steps 1-3 done
    await storage.index.delete("wf-s", created)
    await storage.workflows.delete("wf-s")
    delete = storage.workflows.delete
    resubmitted: list[bool] = []

    async def resubmit() -> None:
        clock.advance(60)
        await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-s", incarnation=2)
        resubmitted.append(True)

    async def stalled_past_a_resubmit(workflow_id: str, etag: str | None = None) -> None:
        await resubmit()  # the id is submitted again while this delete is in flight
        await delete(workflow_id, etag)

    storage.workflows.delete = stalled_past_a_resubmit  # type: ignore[method-assign]
    await purge_workflow(storage, "wf-s")
    storage.workflows.delete = delete  # type: ignore[method-assign]
    if not resubmitted:  # no delete was in flight: the id is submitted again after the purge
        await resubmit()
    assert (await load(storage, diamond(), "wf-s")).incarnation == 2
    assert await storage.workflows.purge_marks() == {}


async def test_a_purge_past_its_state_delete_that_stalls_before_its_check_spares_a_later_one() -> (
    None
):
    """The same, when the id is submitted again before the purge looks (its marker write stalled
    past the re-submit: simulation seed 2192): the definition is there again, and so is the new
    workflow's state, which the purge leaves alone."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-t", incarnation=1)
    await run_to_end(storage, "wf-t", clock)
    created = (await load(storage, diamond(), "wf-t")).created_at
    await storage.workflows.mark_purge("wf-t", PurgeMark(created, 1, True))  # steps 1-3 done
    await storage.index.delete("wf-t", created)
    await storage.workflows.delete("wf-t")
    mark = storage.workflows.mark_purge

    async def stalled_past_a_resubmit(workflow_id: str, purge: PurgeMark) -> None:
        if workflow_id == "wf-t" and purge.incarnation == 1:
            clock.advance(60)
            await service.submit(
                storage, diamond(), now=clock.now, workflow_id="wf-t", incarnation=2
            )
        await mark(workflow_id, purge)

    storage.workflows.mark_purge = stalled_past_a_resubmit  # type: ignore[method-assign]
    await purge_workflow(storage, "wf-t")
    assert (await load(storage, diamond(), "wf-t")).incarnation == 2


async def test_a_purge_that_stalls_while_the_id_is_purged_and_submitted_again_spares_it() -> None:
    """Seed 993 of the simulation: a purge read the status and ETag of the id's workflow, stalled,
    and read its state after another user had purged it and submitted the id again; it marked and
    deleted the index row of the new workflow (the new creation time with the old incarnation),
    leaving that workflow listed nowhere and swept by nobody."""
    import contextlib

    from shared.errors import StaleStateError

    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-s", incarnation=1)
    await run_to_end(storage, "wf-s", clock)
    workflows = storage.workflows
    read_state = workflows.read_state
    stalled = [True]
    failing: list[bool] = []

    async def stalling(workflow_id: str) -> Any:
        if stalled[0]:  # meanwhile: another user purges the id and submits it again
            stalled[0] = False
            workflows.read_state = read_state  # type: ignore[method-assign]
            await purge_workflow(storage, "wf-s")
            clock.advance(60)
            await service.submit(
                storage, diamond(), now=clock.now, workflow_id="wf-s", incarnation=2
            )  # pending: not to be purged
            failing.append(True)  # from now on, the (outer) purge's state delete fails
        return await read_state(workflow_id)

    workflows.read_state = stalling  # type: ignore[method-assign]
    delete = workflows.delete

    async def unavailable(workflow_id: str, etag: str | None = None, **kw: Any) -> None:
        if failing:
            raise OSError("503: the state delete did not reach storage")
        await delete(workflow_id, etag, **kw)

    workflows.delete = unavailable  # type: ignore[method-assign]
    with contextlib.suppress(OSError, StaleStateError, ConflictError):
        await purge_workflow(storage, "wf-s")
    workflows.delete = delete  # type: ignore[method-assign]
    with pytest.raises(ConflictError):  # the user tries again: the new workflow is not finished
        await purge_workflow(storage, "wf-s")
    state = await load(storage, diamond(), "wf-s")
    assert (state.incarnation, state.status) == (2, WorkflowStatus.PENDING)
    rows = (await storage.index.list()).rows
    assert [(row.workflow_id, row.created_at) for row in rows] == [("wf-s", state.created_at)]
