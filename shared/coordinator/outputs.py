"""Inline outputs are bounded where they enter the state.

A completion may carry its output inline (the worker inlines outputs up to
``messages.INLINE_OUTPUT_BYTES``). Before its events are applied, a workflow update moves to the
outputs container — under the attempt's conventional output blob name, exactly where the worker
would have put it — every inline output that is larger than ``inline_output_bytes``, or that would
take the inline outputs held by the workflow's state past ``state_inline_bytes``. The event then
refers to the blob like any large output, so a state blob (and every flush of it) stays small
however many tasks report outputs, and a hostile event cannot grow it without bound.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

from shared.coordinator.envelope import Envelope
from shared.coordinator.stats import PassStats
from shared.engine.state import RuntimeState
from shared.messages import OutputRef, TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.ports import OutputBlobs


def output_json(value: object) -> bytes:
    """An output's stored form: compact UTF-8 JSON (the worker's encoding too)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def state_inline_bytes(state: RuntimeState) -> int:
    """Bytes of the inline outputs a state holds (as recorded when each was accepted)."""
    return sum(ref.size for ref in state.outputs.values() if ref.blob is None)


async def bound_inline_outputs(
    outputs: OutputBlobs,
    state: RuntimeState,
    envelopes: list[Envelope],
    *,
    inline_limit: int,
    state_limit: int,
    stats: PassStats,
) -> None:
    """Rewrite the completions among ``envelopes``: an inline output keeps its place only if it
        fits both limits (its recorded size is then its true size); the others are uploaded and
        referenced by blob, under the state's names (``RuntimeState.blob_incarnation``). An event of
    another incarnation is left as it is: the engine dead-letters it, and nothing of it is written
    under this workflow's names. Raises what the upload raises (the events are then redelivered)."""
    held = state_inline_bytes(state)
    spills: list[tuple[Envelope, TaskCompletedEvent, bytes]] = []
    for env in envelopes:
        event = env.event
        if not isinstance(event, TaskCompletedEvent) or event.output is None:
            continue
        if event.output.blob is not None or event.output.inline is None:
            continue
        if event.incarnation != state.incarnation:
            continue  # of another workflow of the id: dead-lettered, never applied nor stored
        data = output_json(event.output.inline)
        if len(data) <= inline_limit and held + len(data) <= state_limit:
            held += len(data)
            ref = OutputRef(inline=event.output.inline, size=len(data))
            env.event = event.model_copy(update={"output": ref})
        else:
            spills.append((env, event, data))
    incarnation = state.blob_incarnation
    await asyncio.gather(
        *(_spill(outputs, env, event, data, incarnation) for env, event, data in spills)
    )
    stats.outputs_spilled += len(spills)


async def _spill(
    outputs: OutputBlobs,
    env: Envelope,
    event: TaskCompletedEvent,
    data: bytes,
    incarnation: int | None,
) -> None:
    name = ResourceNames.output_blob(event.workflow_id, event.task, event.attempt, incarnation)
    await outputs.put(name, data)
    ref = OutputRef(blob=name, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    env.event = event.model_copy(update={"output": ref})
