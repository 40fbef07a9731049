"""Compiled workflow definitions read from storage, cached once per process.

The API and the coordinator share this cache (in a Functions process they serve the same
workflows). Definition blobs never change, so a cached definition is never stale; the cache is
kept per definition store (weakly: ``Storage.workflows``, which every partition view of a
deployment shares), so deployments and tests never see each other's entries.
"""

from __future__ import annotations

import weakref

from shared.lru import Lru
from shared.storage.ports import Storage, WorkflowBlobs
from shared.workflow import CompiledWorkflow

DEFINITIONS_CACHED = 512
"""Compiled definitions kept per definition store."""

_caches: weakref.WeakKeyDictionary[WorkflowBlobs, Lru[str, CompiledWorkflow]] = (
    weakref.WeakKeyDictionary()
)


async def load_definition(storage: Storage, workflow_id: str) -> CompiledWorkflow:
    """The compiled definition of ``workflow_id`` (a valid id). Raises NotFoundError from
    storage, CodecError for a blob that cannot be decoded."""
    from shared.codec import decode_definition  # heavy; the Functions app imports this early

    cache = _caches.setdefault(storage.workflows, Lru(DEFINITIONS_CACHED))
    wf = cache.get(workflow_id)
    if wf is None:
        wf = decode_definition(await storage.workflows.read_definition(workflow_id))
        cache.put(workflow_id, wf)
    return wf


def forget_definition(storage: Storage, workflow_id: str) -> None:
    """Drop a cached definition (after its workflow was deleted: the id may be used again)."""
    cache = _caches.get(storage.workflows)
    if cache is not None:
        cache.pop(workflow_id)
