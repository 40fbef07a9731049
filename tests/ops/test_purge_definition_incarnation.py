"""A purge deletes a definition blob only if it is the purged incarnation's (issue 30, simulation
seeds 2136 and 5168: a late delete from the purge of an earlier workflow landed on the definition
a re-submit of the same id relied on, leaving a state with no definition, pending for good)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.api import service
from shared.codec.definition import encode_definition
from shared.errors import IncompleteSubmitError, NotFoundError
from shared.names import ResourceNames
from shared.ops.purge import purge_many, purge_workflow
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from shared.storage.ports import PurgeMark
from tests.coordinator.helpers import FakeClock, diamond, load
from tests.ops.runs import run_to_end

DAY = 86400.0


async def test_a_purge_finishing_from_its_mark_spares_the_definition_of_a_resubmit() -> None:
    """Seed 2136: one user's purge deleted the state and definition and re-submits the id; the
    re-submit created its definition; another user's purge, finishing from the first one's mark
    (no state there), deleted that definition before the re-submit created its state."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-a", incarnation=1)
    await run_to_end(storage, "wf-a", clock)
    created = (await load(storage, diamond(), "wf-a")).created_at
    await storage.workflows.mark_purge("wf-a", PurgeMark(created, 1, True))  # steps 1-3
    await storage.index.delete("wf-a", created)
    await storage.workflows.delete("wf-a")
    create_state = storage.workflows.create_state
    purged: list[str] = []

    async def after_another_purge(workflow_id: str, *args: Any, **kw: Any) -> str:
        if not purged:  # the other user's purge finishes from the mark, here
            purged.append((await purge_workflow(storage, workflow_id)).status)
        return await create_state(workflow_id, *args, **kw)

    storage.workflows.create_state = after_another_purge  # type: ignore[method-assign]
    clock.advance(60)
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-a", incarnation=2)
    assert purged == ["purging"]
    assert await storage.workflows.read_definition("wf-a") == encode_definition(diamond())
    state = await load(storage, diamond(), "wf-a")
    assert (state.incarnation, state.status) == (2, WorkflowStatus.PENDING)
    assert await storage.workflows.purge_marks() == {}


async def test_a_resubmit_relying_on_the_old_definition_keeps_it_across_a_purge() -> None:
    """Seed 5168: a re-submit found the old workflow's definition (its create-only write refused)
    and relied on it; a purge of the old workflow then deleted its state and that definition, and
    the re-submit created its state in the id freed: a state without a definition."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-b", incarnation=1)
    await run_to_end(storage, "wf-b", clock)
    read_definition = storage.workflows.read_definition
    purged: list[str] = []

    async def then_purged(workflow_id: str) -> bytes:
        data = await read_definition(workflow_id)
        if not purged:  # the re-submit's check is done: another user purges the old workflow
            purged.append((await purge_workflow(storage, workflow_id)).status)
        return data

    storage.workflows.read_definition = then_purged  # type: ignore[method-assign]
    clock.advance(60)
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-b", incarnation=2)
    storage.workflows.read_definition = read_definition  # type: ignore[method-assign]
    assert purged == ["completed"]
    assert await storage.workflows.read_definition("wf-b") == encode_definition(diamond())
    state = await load(storage, diamond(), "wf-b")
    assert (state.incarnation, state.status) == (2, WorkflowStatus.PENDING)
    assert [row.workflow_id for row in (await storage.index.list()).rows] == ["wf-b"]


async def test_a_purge_between_a_resubmits_state_and_its_claim_spares_the_definition() -> None:
    """The same, the purge's definition delete landing after the re-submit created its state: the
    re-submit writes the definition as its own, so the purge's delete (If-Match) misses."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-c", incarnation=1)
    await run_to_end(storage, "wf-c", clock)
    workflows = storage.workflows
    read_definition, delete_definition = workflows.read_definition, workflows.delete_definition
    resubmitted: list[bool] = []

    async def resubmit_first(workflow_id: str, etag: str) -> bool:
        if not resubmitted:  # the purge read the old definition's ETag; the re-submit runs now
            resubmitted.append(True)
            clock.advance(60)
            await service.submit(
                storage, diamond(), now=clock.now, workflow_id=workflow_id, incarnation=2
            )
        return await delete_definition(workflow_id, etag)

    workflows.delete_definition = resubmit_first  # type: ignore[method-assign]
    await purge_workflow(storage, "wf-c")
    assert resubmitted
    assert await read_definition("wf-c") == encode_definition(diamond())
    state = await load(storage, diamond(), "wf-c")
    assert (state.incarnation, state.status) == (2, WorkflowStatus.PENDING)


async def test_a_definition_written_before_incarnations_is_read_and_purged() -> None:
    """A definition blob from an older dagq (no incarnation in its metadata) stays readable, and
    the purge of its workflow deletes it."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-o", incarnation=1)
    container = storage.workflows.container  # type: ignore[attr-defined]
    name = ResourceNames.definition_blob("wf-o")
    container.put(name, container.get(name).data)  # as an older dagq wrote it: no metadata
    assert (await storage.workflows.definition_properties("wf-o"))[0] is None
    await run_to_end(storage, "wf-o", clock)
    await purge_workflow(storage, "wf-o")
    assert name not in container.blobs
    report = await purge_many(storage, now=clock.now + 10 * DAY, older_than_s=DAY)
    assert report.resumed == []


async def test_a_repeated_submit_makes_the_definition_its_states_when_its_first_try_could_not() -> (
    None
):
    """Seed 3402 of ``make sim SEEDS=10000``: a submit's try found the definition an earlier try
    had written (and died before its state), created its state, and got a 503 writing the
    definition as its own; the user's repeat found the state and left the definition another
    incarnation's. A purge of the workflow then spared that definition (not the purged
    incarnation's), and the purge tried again was refused: the id held a definition with no
    state. The workflow was purged while its purge said it was not."""
    storage = memory_storage("inc")
    clock = FakeClock()
    await storage.workflows.create_definition("wf-d", encode_definition(diamond()), 1)  # try 1
    write_definition = storage.workflows.write_definition

    async def unavailable(*_: Any, **__: Any) -> None:
        raise ConnectionError("503 Server Busy")

    storage.workflows.write_definition = unavailable  # type: ignore[method-assign]
    with pytest.raises(IncompleteSubmitError):  # try 2: its state, not the definition's rewrite
        await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-d", incarnation=2)
    storage.workflows.write_definition = write_definition  # type: ignore[method-assign]
    await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-d", incarnation=3)
    assert (await storage.workflows.definition_properties("wf-d"))[0] == 2  # the state's
    await run_to_end(storage, "wf-d", clock)
    assert (await purge_workflow(storage, "wf-d")).status == "completed"
    with pytest.raises(NotFoundError):
        await storage.workflows.read_definition("wf-d")
    assert await storage.workflows.purge_marks() == {}
