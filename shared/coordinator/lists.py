"""Reading the lists of dynamic fan-outs (``foreach_from``) that arrive in blob outputs.

The engine is pure: when a task whose output feeds a ``foreach_from`` completes with an output too
large to travel inline (a 10,000-item list), the coordinator reads that blob (bounded) before the
event is applied and hands the content to the engine beside the event (``engine.apply(...,
lists={blob: value})``); the engine captures the list, the state keeps the output's reference. A
blob that is missing, too large or not JSON is left unread: the engine then fails the
``foreach_from`` task with the reason, never the coordinator.
"""

from __future__ import annotations

import logging

from shared import engine
from shared.coordinator.blob_reads import read_as_claimed
from shared.coordinator.envelope import Envelope
from shared.definition.workflow import CompiledWorkflow
from shared.errors import MessageError, NotFoundError, SizeMismatchError
from shared.json_values import parse_untrusted
from shared.messages import TaskCompletedEvent
from shared.messages.fields import parent_output_blob
from shared.storage.ports import OutputBlobs

log = logging.getLogger("dagq.coordinator")


async def read_lists(
    outputs: OutputBlobs, workflow_id: str, wf: CompiledWorkflow, envelopes: list[Envelope]
) -> dict[str, object]:
    """Blob name -> parsed content, for each list-feeding blob output among the completions
    (for ``engine.apply(..., lists=)``); blobs that cannot be read are left out."""
    found: dict[str, object] = {}
    sources = engine.list_sources(wf)
    if not sources:
        return found
    for env in envelopes:
        event = env.event
        if not isinstance(event, TaskCompletedEvent) or event.task not in sources:
            continue
        ref = event.output
        if ref is None or ref.blob is None or ref.blob in found:
            continue
        value = await _read(outputs, workflow_id, event, ref.blob, ref.size)
        if value is not None:
            found[ref.blob] = value
    return found


def cached_list(
    wf: CompiledWorkflow, completion: TaskCompletedEvent, payload: bytes | None
) -> dict[str, object]:
    """For a completion answered from the cache (``results.Hit``): blob name -> parsed content
    when the task feeds a ``foreach_from`` list and its output is a blob (the bytes the cache
    held), as ``read_lists`` gives for a worker's completion. A cached list source's children
    then expand as they do after a run (they failed to, for want of the list)."""
    ref = completion.output
    if ref is None or ref.blob is None or payload is None:
        return {}
    if completion.task not in engine.list_sources(wf) or len(payload) > engine.MAX_LIST_BYTES:
        return {}
    try:
        return {ref.blob: parse_untrusted(payload)}
    except ValueError:
        return {}


async def _read(
    outputs: OutputBlobs, workflow_id: str, event: TaskCompletedEvent, blob: str, size: int
) -> object | None:
    # Only the task's own outputs are read (its output blob names, of the event's incarnation).
    task = event.task
    try:
        own = parent_output_blob(workflow_id, task, blob, event.incarnation)
    except MessageError:
        own = None
    if own != blob:
        log.warning(
            "workflow %s: list output %r of %s is not the task's own", workflow_id, blob, task
        )
        return None
    if size > engine.MAX_LIST_BYTES:
        return None
    try:
        data = await read_as_claimed(outputs, blob, size)
    except NotFoundError:
        log.warning("workflow %s: list output %r of %s is missing", workflow_id, blob, task)
        return None
    except SizeMismatchError as exc:
        log.warning("workflow %s: list output of %s refused: %s", workflow_id, task, exc)
        return None
    try:
        value: object = parse_untrusted(data)
    except ValueError:
        return None
    return value
