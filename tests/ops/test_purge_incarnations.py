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
from shared.errors import NotFoundError
from shared.ops.purge import purge_workflow
from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.helpers import FakeClock, diamond, drive, load
from tests.support.synthetic_worker import Behavior, SyntheticWorker

BIG = "x" * 20_000  # an output too large to travel inline: it is a blob


async def _run_to_end(storage: MemoryStorage, workflow_id: str, clock: FakeClock) -> None:
    worker = SyntheticWorker(
        storage, storage.names, ["cpu"], clock=clock, script={"*": Behavior(output=BIG)}
    )

    async def done() -> bool:
        return (await load(storage, diamond(), workflow_id)).status.is_terminal

    await drive(storage, storage.names, worker, done, clock=clock)


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
    await _run_to_end(storage, "wf-r", clock)
    delete_state = storage.workflows.delete
    new_run: set[str] = set()

    async def resubmitted_after_step_3(workflow_id: str, etag: str | None = None) -> None:
        await delete_state(workflow_id, etag)  # step 3 done; the id is free again
        clock.advance(60)
        await service.submit(storage, diamond(), now=clock.now, workflow_id="wf-r", incarnation=2)
        with _written(storage) as written:
            await _run_to_end(storage, "wf-r", clock)
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
    await _run_to_end(storage, "wf-p", clock)
    assert _blobs(storage)
    view = await purge_workflow(storage, "wf-p")
    assert view.blobs_deleted >= 8
    assert _blobs(storage) == set()
    with pytest.raises(NotFoundError):
        await purge_workflow(storage, "wf-p")
