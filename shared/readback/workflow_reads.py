"""Reading a workflow from storage: its compiled definition (cached once per process) and the
workflow as it runs (definition, ``foreach_from`` expansions and current state).

A state blob of codec version 9 carries a small definition (``state_definition`` takes it from
there: no read of the definition blob). The API, the coordinator and the operations share the
definition cache (in a Functions process they
serve the same
workflows). Definition blobs never change, so a cached definition is never stale; the cache is
kept per definition store (weakly: ``Storage.workflows``, which every partition view of a
deployment shares), so deployments and tests never see each other's entries.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from shared.codec.definition import decode_definition
from shared.codec.state import carried_definition, decode_state
from shared.definition.workflow import CompiledWorkflow
from shared.engine import expanded
from shared.errors import NotFoundError
from shared.lru import Lru
from shared.names import check_workflow_id
from shared.storage.ports import Storage, WorkflowBlobs

if TYPE_CHECKING:
    from shared.engine.state import RuntimeState

DEFINITIONS_CACHED_BYTES = 64 * 1024 * 1024
"""Memory the compiled definitions kept per definition store may take (``definition_weight``):
about 20,000 five-task workflows, so that a process serving every active workflow of a busy
deployment does not re-read their definitions (512 definitions, the bound before, cost 1.9 reads
per task in ``bench_concurrent`` with 10,000 active workflows)."""
DEFINITION_BYTES_PER_TASK = 500
"""Estimated memory of one compiled task (tracemalloc: about 450 bytes)."""
DEFINITION_BYTES_FIXED = 2048
"""Estimated memory of a compiled definition apart from its tasks."""


def definition_weight(wf: CompiledWorkflow) -> int:
    """An estimate of what a compiled definition holds in memory, in bytes."""
    return DEFINITION_BYTES_FIXED + DEFINITION_BYTES_PER_TASK * len(wf.tasks)


_caches: weakref.WeakKeyDictionary[WorkflowBlobs, Lru[str, CompiledWorkflow]] = (
    weakref.WeakKeyDictionary()
)


def _cache(storage: Storage) -> Lru[str, CompiledWorkflow]:
    return _caches.setdefault(storage.workflows, Lru(DEFINITIONS_CACHED_BYTES, definition_weight))


async def cached_definition(storage: Storage, workflow_id: str) -> CompiledWorkflow:
    """The compiled definition of ``workflow_id`` (a valid id). Raises NotFoundError from
    storage, CodecError for a blob that cannot be decoded."""
    cache = _cache(storage)
    wf = cache.get(workflow_id)
    if wf is None:
        wf = decode_definition(await storage.workflows.read_definition(workflow_id))
        cache.put(workflow_id, wf)
    return wf


async def state_definition(storage: Storage, workflow_id: str, state: bytes) -> CompiledWorkflow:
    """The compiled definition of ``workflow_id`` whose state blob holds ``state``: cached, else
    the one the state carries (version 9: no read), else its definition blob's (a read). Raises
    NotFoundError from storage, CodecError for bytes that cannot be decoded."""
    cache = _cache(storage)
    wf = cache.get(workflow_id)
    if wf is None:
        carried = carried_definition(state)
        if carried is None:
            return await cached_definition(storage, workflow_id)
        wf = decode_definition(carried)
        cache.put(workflow_id, wf)
    return wf


def forget_definition(storage: Storage, workflow_id: str) -> None:
    """Drop a cached definition (after its workflow was deleted: the id may be used again)."""
    cache = _caches.get(storage.workflows)
    if cache is not None:
        cache.pop(workflow_id)


async def read_definition(storage: Storage, workflow_id: str) -> CompiledWorkflow:
    """The compiled definition of a workflow; InvalidIdError for an id that cannot be one,
    NotFoundError (naming it) for one that does not exist."""
    check_workflow_id(workflow_id)
    try:
        return await cached_definition(storage, workflow_id)
    except NotFoundError:
        raise NotFoundError(f"workflow {workflow_id!r} not found") from None


async def read_workflow(
    storage: Storage, workflow_id: str
) -> tuple[CompiledWorkflow, RuntimeState]:
    """A workflow as it runs (its definition plus any ``foreach_from`` expansions) and its
    current state (the state blob is authoritative). The state is read first: when it carries
    its definition (version 9), the definition blob is not read."""
    check_workflow_id(workflow_id)
    try:
        stored = await storage.workflows.read_state(workflow_id)
    except NotFoundError:
        await read_definition(storage, workflow_id)  # no definition either: "not found"
        raise NotFoundError(
            f"workflow {workflow_id!r} was not completely submitted (its state is missing):"
            f" submit the same definition again with ?id={workflow_id} to finish it"
        ) from None
    try:
        wf = await state_definition(storage, workflow_id, stored.data)
    except NotFoundError:
        raise NotFoundError(f"workflow {workflow_id!r} not found") from None
    state = decode_state(stored.data, wf)
    return expanded(wf, state), state
