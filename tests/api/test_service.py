"""The API operations over the in-memory storage fakes: write order, idempotent and repairing
submit, conflicts, cancel and retry bookkeeping. (HTTP and Azurite: test_workflows_http.py.)"""

from __future__ import annotations

import pytest

from shared.api import reads, service
from shared.codec.state import decode_state
from shared.definition.compiler import compile_text
from shared.definition.workflow import CompiledWorkflow
from shared.errors import ConflictError, IncompleteSubmitError, InvalidIdError, NotFoundError
from shared.messages import ActivateEvent, CancelEvent, RetryEvent, decode_event
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from shared.storage.ports import IndexRow, Storage

DEFINITION = """
name: pair
tasks:
  - {name: a, kwargs: {cmd: "echo a"}}
  - {name: b, kwargs: {cmd: "echo b"}, depends_on: [a]}
"""
NOW = 1_800_000_000.0


async def events(storage: Storage) -> list[object]:
    received = await storage.event_queue.receive(32, 30)
    return [decode_event(m.text) for m in received]


async def test_submit_writes_definition_state_row_then_activates() -> None:
    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    result = await service.submit(storage, wf, now=NOW)
    assert result.created
    assert result.status is WorkflowStatus.PENDING
    assert result.workflow_id.startswith("20270115-")  # time-sortable generated id
    data = (await storage.workflows.read_state(result.workflow_id)).data
    state = decode_state(data, wf)
    assert state.status is WorkflowStatus.PENDING
    row = await storage.index.get(result.workflow_id, state.created_at)
    assert row is not None
    assert row.name == "pair"
    assert row.total == 2
    assert await events(storage) == [ActivateEvent(workflow_id=result.workflow_id)]


async def test_resubmit_is_idempotent_and_repairs_a_partial_submit() -> None:
    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    # A submit that crashed right after its first write: only the definition exists.
    from shared.codec.definition import encode_definition

    assert await storage.workflows.create_definition("w1", encode_definition(wf))
    with pytest.raises(NotFoundError, match="not completely submitted") as caught:
        await reads.get_workflow(storage, "w1")
    assert "with ?id=w1 to finish it" in str(caught.value)  # not "?id={workflow_id}"

    again = await service.submit(storage, compile_text(DEFINITION), now=NOW, workflow_id="w1")
    assert not again.created  # the definition was already there: 200, not 201
    view = await reads.get_workflow(storage, "w1")
    assert view.status == "pending"
    assert set(view.tasks) == {"a", "b"}
    listing = await reads.list_workflows(storage, url_for=str)
    assert [item.id for item in listing.items] == ["w1"]
    assert await events(storage) == [ActivateEvent(workflow_id="w1")]

    # Once more: nothing new is written (one row), the activate is re-sent while still pending.
    await service.submit(storage, wf, now=NOW + 5, workflow_id="w1")
    assert len((await reads.list_workflows(storage, url_for=str)).items) == 1


async def test_same_id_different_definition_conflicts() -> None:
    storage = memory_storage("api")
    await service.submit(storage, compile_text(DEFINITION), now=NOW, workflow_id="w1")
    other = compile_text(DEFINITION.replace("echo b", "echo B"))
    with pytest.raises(ConflictError, match="different definition"):
        await service.submit(storage, other, now=NOW, workflow_id="w1")
    reformatted = compile_text(DEFINITION.replace("{name: a,", "{ name: a ,"))
    assert not (await service.submit(storage, reformatted, now=NOW, workflow_id="w1")).created


async def test_cancel_sets_the_durable_flag_and_repairs_a_missing_row() -> None:
    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    from shared.codec.definition import encode_definition
    from shared.codec.state import encode_state, state_metadata
    from shared.engine import new_state

    # Definition and state exist, the index row does not (crash before Index.create).
    state = new_state(wf, "w2", NOW)
    await storage.workflows.create_definition("w2", encode_definition(wf))
    await storage.workflows.create_state("w2", encode_state(state), state_metadata(state))

    result = await service.cancel(storage, "w2", reason="stop")
    assert result.sent
    row = await storage.index.get("w2", NOW)
    assert row is not None
    assert row.cancel_requested
    assert await events(storage) == [CancelEvent(workflow_id="w2", reason="stop")]
    again = await service.cancel(storage, "w2")
    assert again.sent  # idempotent: the flag stays, another event is harmless


async def test_retry_needs_a_failed_or_cancelled_workflow() -> None:
    storage = memory_storage("api")
    await service.submit(storage, compile_text(DEFINITION), now=NOW, workflow_id="w3")
    with pytest.raises(ConflictError, match="pending"):
        await service.retry(storage, "w3")


async def test_unknown_and_malformed_names() -> None:
    storage = memory_storage("api")
    with pytest.raises(NotFoundError, match="'ghost' not found"):
        await reads.get_workflow(storage, "ghost")
    with pytest.raises(InvalidIdError):
        await reads.get_workflow(storage, "../etc")
    await service.submit(storage, compile_text(DEFINITION), now=NOW, workflow_id="w4")
    with pytest.raises(NotFoundError, match="no task 'zz'"):
        await reads.get_task(storage, "w4", "zz", outputs_container="c")
    with pytest.raises(InvalidIdError):
        await reads.get_task(storage, "w4", "../a", outputs_container="c")
    detail = await reads.get_task(storage, "w4", "b", outputs_container="c")
    assert detail.depends_on == ["a"]
    assert detail.output is None
    assert detail.log is None


async def test_health_reports_depths_and_lease() -> None:
    storage = memory_storage("api")
    await service.submit(storage, compile_text(DEFINITION), now=NOW)
    body = await reads.health(storage)
    assert body.event_queue.depth == 1
    assert body.coordinator.lease_held is False
    lease = await storage.lease.acquire(30)
    assert lease is not None
    assert (await reads.health(storage)).coordinator.lease_held is True


class _FailingIndex:
    """The memory index, except that ``create`` fails (a storage hiccup mid-submit)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    async def create(self, row: object) -> None:
        raise ConnectionError("index unreachable")

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


async def test_a_submit_that_fails_half_way_names_the_id_to_complete_it() -> None:
    import dataclasses

    storage = memory_storage("api")
    broken = dataclasses.replace(storage, index=_FailingIndex(storage.index))
    wf = compile_text(DEFINITION)
    with pytest.raises(IncompleteSubmitError) as caught:
        await service.submit(broken, wf, now=NOW)
    workflow_id = caught.value.workflow_id
    assert f"?id={workflow_id}" in str(caught.value)
    assert await events(storage) == []  # nothing was activated

    again = await service.submit(storage, wf, now=NOW, workflow_id=workflow_id)
    assert not again.created
    listing = await reads.list_workflows(storage, url_for=str)
    assert [item.id for item in listing.items] == [workflow_id]
    assert await events(storage) == [ActivateEvent(workflow_id=workflow_id)]


async def test_a_workflow_is_routed_to_its_partition_for_good() -> None:
    from shared.deployment import partition_from_metadata, partition_of

    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    workflow_id = next(f"w{i}" for i in range(100) if partition_of(f"w{i}", 4) == 3)
    await service.submit(storage, wf, now=NOW, workflow_id=workflow_id, partitions=4, incarnation=5)
    three = storage.for_partition(3)
    assert await events(storage) == []
    activate = [decode_event(m.text) for m in await three.event_queue.receive(32, 30)]
    assert activate == [ActivateEvent(workflow_id=workflow_id)]
    assert partition_from_metadata(await storage.workflows.state_metadata(workflow_id)) == 3
    (row,) = await storage.index.active()
    assert row.partition == 3
    # Fewer partitions later (or a repeated submit) never moves a workflow that exists.
    again = await service.submit(storage, wf, now=NOW, workflow_id=workflow_id, partitions=1)
    assert not again.created
    await service.cancel(storage, workflow_id, reason="stop")
    received = [decode_event(m.text) for m in await three.event_queue.receive(32, 30)]
    assert received[-1] == CancelEvent(workflow_id=workflow_id, reason="stop", incarnation=5)
    assert await events(storage) == []


async def test_each_workflow_of_an_id_is_an_incarnation_of_its_own() -> None:
    """Drawn at submit, kept by a repeated submit, carried by cancel and retry events (so a purged
    workflow's late events never act on the workflow submitted again under its id)."""
    from shared.codec.metadata import incarnation_from_metadata
    from shared.ops.purge import purge_workflow

    storage = memory_storage("api")
    wf = compile_text(DEFINITION)

    async def incarnation() -> int | None:
        return incarnation_from_metadata(await storage.workflows.state_metadata("w9"))

    await service.submit(storage, wf, now=NOW, workflow_id="w9")
    first = await incarnation()
    assert first is not None
    await service.submit(storage, wf, now=NOW, workflow_id="w9")  # a repeated submit
    assert await incarnation() == first
    await service.cancel(storage, "w9")
    assert (await events(storage))[-1] == CancelEvent(workflow_id="w9", incarnation=first)
    await storage.workflows.write_state(  # as the coordinator would, once it is cancelled
        "w9", *await _cancelled_state(storage, wf, "w9")
    )
    await service.retry(storage, "w9")
    assert (await events(storage))[-1] == RetryEvent(workflow_id="w9", run=1, incarnation=first)
    await purge_workflow(storage, "w9")
    await service.submit(storage, wf, now=NOW + 60, workflow_id="w9")
    assert await incarnation() not in (None, first)


async def _cancelled_state(
    storage: MemoryStorage, wf: CompiledWorkflow, workflow_id: str
) -> tuple[bytes, str, dict[str, str]]:
    from shared.codec.state import decode_state, encode_state, state_metadata
    from shared.states import WorkflowStatus

    data, etag, _ = await storage.workflows.read_state(workflow_id)
    state = decode_state(data, wf)
    state.status = WorkflowStatus.CANCELLED
    return encode_state(state), etag, state_metadata(state)


@pytest.mark.parametrize("operation", ["cancel", "retry"])
async def test_a_row_repair_never_brings_back_a_purged_workflows_row(operation: str) -> None:
    """Cancel and retry write a missing index row (a submit that crashed before it). If the row
    is missing because the workflow they read was purged meanwhile (and its id submitted again),
    that row must not come back beside the new workflow's (found by the simulation, seeds 215
    and 326 of ``make sim SEEDS=3000``)."""
    from shared.ops.purge import purge_workflow

    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    await service.submit(storage, wf, now=NOW, workflow_id="w8")
    if operation == "retry":
        await storage.workflows.write_state("w8", *await _cancelled_state(storage, wf, "w8"))
    flag = "request_cancel" if operation == "cancel" else "clear_cancel"
    original = getattr(storage.index, flag)

    async def purged_meanwhile(workflow_id: str, created_at: float) -> None:
        setattr(storage.index, flag, original)  # once
        if operation == "cancel":  # the workflow finished meanwhile...
            await storage.workflows.write_state("w8", *await _cancelled_state(storage, wf, "w8"))
        await purge_workflow(storage, "w8")  # ...was purged, and its id submitted again
        await service.submit(storage, wf, now=NOW + 60, workflow_id="w8")
        await original(workflow_id, created_at)

    setattr(storage.index, flag, purged_meanwhile)
    with pytest.raises(NotFoundError, match="purged"):
        await getattr(service, operation)(storage, "w8")
    rows = [r for r in (await storage.index.list()).rows if r.workflow_id == "w8"]
    assert [r.created_at for r in rows] == [NOW + 60]


async def test_a_repeated_submit_never_brings_back_a_purged_workflows_row() -> None:
    """A repeated submit found the workflow, which was then purged before it wrote the index row
    (the simulation, seed 215 of ``make sim SEEDS=3000``): no row of the purged workflow, and the
    submit is incomplete (submitting again creates a new workflow)."""
    from shared.ops.purge import purge_workflow

    storage = memory_storage("api")
    wf = compile_text(DEFINITION)
    await service.submit(storage, wf, now=NOW, workflow_id="w6")
    await storage.workflows.write_state("w6", *await _cancelled_state(storage, wf, "w6"))
    create = storage.index.create

    async def purged_meanwhile(row: IndexRow) -> None:
        storage.index.create = create  # type: ignore[method-assign]
        await purge_workflow(storage, "w6")
        await create(row)

    storage.index.create = purged_meanwhile  # type: ignore[method-assign]
    with pytest.raises(IncompleteSubmitError):
        await service.submit(storage, wf, now=NOW + 30, workflow_id="w6")
    assert [r for r in (await storage.index.list()).rows if r.workflow_id == "w6"] == []
    again = await service.submit(storage, wf, now=NOW + 60, workflow_id="w6")
    assert again.created
