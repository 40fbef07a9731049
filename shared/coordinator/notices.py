"""Notifications (issue 29): what the coordinator enqueues when a workflow ends, never waiting on
a webhook.

A workflow update takes a ``Watch`` of the state before it applies anything (only for workflows
with ``notify:`` targets, or every workflow when an Event Grid topic is configured); after the
change, ``notices`` compares: a workflow that became completed, failed or cancelled (or ended
again after a rerun), and tasks that became ``failed`` (their retries spent: ``task_failed``).
Each (event, webhook) pair is one small ``NotifyMessage`` on the notify queue, sent before the
state is flushed, like a dispatch: a crash in between sends it again on redelivery (at least
once), and the ``notify`` function (``shared.notify``) delivers only what the stored state
confirms. A failing send fails the update (the events stay queued), so nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from shared import engine
from shared.definition.workflow import CompiledWorkflow, NotifyEvent
from shared.engine.state import FAILED, RuntimeState
from shared.messages import NotifyMessage, encode
from shared.names import ResourceNames
from shared.signing import Signer
from shared.states import WorkflowStatus
from shared.storage.ports import Storage


@dataclass(frozen=True)
class Watch:
    """What ``notices`` compares against: the state's status, run and failed tasks before."""

    status: WorkflowStatus
    run: int
    failed: frozenset[int] | None
    """Failed task numbers, when some target wants ``task_failed`` (else None: not tracked)."""


def watch(wf: CompiledWorkflow, state: RuntimeState, eventgrid: bool) -> Watch | None:
    """The watch of ``state`` (None: nobody is told of this workflow; costs nothing more)."""
    if not wf.notify and not eventgrid:
        return None
    tasks = eventgrid or any("task_failed" in t.events for t in wf.notify)
    return Watch(state.status, state.run, _failed(state) if tasks else None)


def _failed(state: RuntimeState) -> frozenset[int]:
    """The numbers of the failed tasks: a scan of the state codes in C (``bytearray.find``), so a
    100,000-task workflow with webhooks costs each update little."""
    found: list[int] = []
    codes, at = state.codes, 0
    for _ in range(state.tally[FAILED]):
        at = codes.find(FAILED, at)
        if at < 0:
            break
        found.append(at)
        at += 1
    return frozenset(found)


def notices(
    wf: CompiledWorkflow, state: RuntimeState, before: Watch, now: float, eventgrid: bool
) -> list[NotifyMessage]:
    """The notifications the change from ``before`` to ``state`` calls for."""
    events: list[tuple[NotifyEvent, str | None]] = []
    changed = before.failed is not None and (
        state.tally[FAILED] != len(before.failed) or state.run != before.run
    )
    if changed and before.failed is not None:
        new = sorted(_failed(state) - before.failed)
        if new:
            running = engine.expanded(wf, state)
            events += [("task_failed", running.tasks[i].name) for i in new]
    ended = state.status.is_terminal and (
        state.status is not before.status or state.run != before.run
    )
    if ended:
        events.append((cast(NotifyEvent, state.status.value), None))
    out = []
    for event, task in events:
        targets: list[int | None] = [i for i, t in enumerate(wf.notify) if event in t.events]
        if eventgrid:
            targets.append(None)
        out += [
            NotifyMessage(
                workflow_id=state.workflow_id,
                incarnation=state.incarnation,
                run=state.run,
                event=event,
                task=task,
                at=now,
                target=target,
            )
            for target in targets
        ]
    return out


class Notifier:
    """Sends notifications to the notify queue (signed with the app's key when it has one)."""

    def __init__(self, storage: Storage, names: ResourceNames, signer: Signer | None) -> None:
        self.queue = storage.queues.get(names.notify_queue)
        self.poison = storage.queues.get(names.notify_poison_queue)
        """Where the host moves what the notify function failed on (``notify_poison``)."""
        self._signer = signer

    async def send(self, messages: Sequence[NotifyMessage]) -> None:
        """Send every message (at once); raises if one cannot be sent."""
        signer = self._signer
        texts = [encode(signer.sign(m) if signer is not None else m) for m in messages]
        await asyncio.gather(*(self.queue.send(text) for text in texts))
