"""The submit's own dispatch of a new workflow's roots (issue 32: fewer requests per task).

For a workflow whose roots are plain (``plain_roots``), the submit sends the roots' task messages
itself, built and signed exactly as the coordinator builds them (``dispatch.message_text``), and
then creates the state blob already running with those roots queued: no activate event, no
activation pass, no activation flush. Dispatch before the write, as the coordinator does: a crash
in between leaves orphan messages (a state never created, or another incarnation's), which
workers drop (docs/coordinator.md, "Roots dispatched by the submit"), never a lost dispatch.
Anything else (a cached root, a ``when:``, a ``foreach_from``, more roots than
``max_parallelism`` or than ``MAX_SUBMIT_ROOTS``) is activated by the coordinator as before.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from shared.errors import MessageError
from shared.messages import ActivateEvent

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow
    from shared.engine.state import RuntimeState
    from shared.names import ResourceNames
    from shared.signing import Signer
    from shared.storage.ports import Storage

MAX_SUBMIT_ROOTS = 16
"""At most this many roots are sent by the submit itself (more: the coordinator activates)."""


def plain_roots(wf: CompiledWorkflow) -> bool:
    """Whether the submit may dispatch ``wf``'s roots itself: at most ``MAX_SUBMIT_ROOTS`` roots,
    none beyond ``max_parallelism``, none cached, conditional (``when:``) or ``foreach_from``."""
    roots = [t for t in wf.tasks if not t.parents]
    if not 0 < len(roots) <= MAX_SUBMIT_ROOTS:
        return False
    if wf.max_parallelism is not None and len(roots) > wf.max_parallelism:
        return False
    return all(t.cache is None and t.condition is None and t.expand is None for t in roots)


def activated(
    wf: CompiledWorkflow,
    workflow_id: str,
    now: float,
    incarnation: int,
    partition: int,
    signer: Signer | None,
    definition: bytes | None = None,
) -> tuple[RuntimeState, list[tuple[str, str]]] | None:
    """The new workflow's state activated at ``now`` (running, its roots queued at attempt 1 of
    run 1) and the roots' task messages as ``(definition queue, text)``; None when the
    coordinator must activate it (roots not plain, or a message that does not fit the budget)."""
    from shared import engine
    from shared.coordinator.dispatch import message_text
    from shared.engine.commands import Dispatch

    if not plain_roots(wf):
        return None
    state = engine.new_state(wf, workflow_id, now, incarnation, definition)
    commands = engine.apply(wf, state, ActivateEvent(workflow_id=workflow_id), now)
    roots = sum(not t.parents for t in wf.tasks)
    dispatches = [c for c in commands if isinstance(c, Dispatch) and not c.delay_s]
    if len(dispatches) != len(commands) or len(dispatches) != roots:
        return None  # not the plain activation this path is for
    try:
        texts = [(d.queue, message_text(workflow_id, wf, d, partition, signer)) for d in dispatches]
    except MessageError:  # an enormous cmd: the coordinator fails the attempt with the reason
        return None
    return state, texts


async def send_roots(
    storage: Storage, names: ResourceNames, messages: list[tuple[str, str]]
) -> None:
    """Send the roots' task messages, all at once; raises if one cannot be sent (the submit then
    writes nothing more: the messages sent are orphans)."""
    sends = [_send(storage, names.task_queue(queue), text) for queue, text in messages]
    results = await asyncio.gather(*sends, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def _send(storage: Storage, azure_queue: str, text: str) -> None:
    """One root's task message to its task queue."""
    await storage.queues.get(azure_queue).send(text)
