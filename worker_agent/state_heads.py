"""The HEADs of workflows' state blobs a worker makes, shared by its tasks (docs/worker.md).

A task reads its workflow's state blob metadata right before it runs (after its claim:
``workflow_check.WorkflowSeen``) and then now and again while it runs (``cancel_watch``). The
worker's tasks of one workflow share the answers: a task takes the latest HEAD of its workflow
if that was sent late enough for it — for the check before the run, no earlier than the task's
claim completed (a HEAD from before the claim could be stale by the time the task starts: the
simulation found one, seed 2306); for a cancel check, at most half the check's interval ago — and
sends a new one otherwise. So a fan-out landing on a many-slot worker makes a few HEADs per
workflow where it made one per task, and a cancel check right after the run began costs none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping

from shared.messages import TaskMessage
from shared.storage.ports import Storage
from worker_agent.workflow_check import (
    WorkflowSeen,
    cancelled_by,
    seen_in,
    state_metadata_or_none,
)

_Key = tuple[str, int | None]
"""A workflow of one incarnation: its messages get the same answer."""

_FORGET_AFTER_S = 600.0
"""Answers older than this are dropped (their tasks ended long ago): the map stays small."""

Metadata = Mapping[str, str] | None
"""A state blob's metadata; None: there is no state blob."""


class StateHeads:
    """The latest HEAD of each workflow's state blob, shared by the worker's tasks."""

    def __init__(self, storage: Storage, clock: Callable[[], float] = time.monotonic) -> None:
        self.storage = storage
        self.clock = clock
        self.heads = 0
        """HEADs of state blobs made, for tests and the benchmark."""
        self._latest: dict[_Key, tuple[float, asyncio.Task[Metadata]]] = {}
        """Workflow -> (when its latest HEAD was sent, the HEAD)."""

    async def seen(self, message: TaskMessage, *, sent_after: float) -> WorkflowSeen:
        """What ``message``'s workflow is, from a HEAD sent no earlier than ``sent_after`` (this
        clock's time); raises what the HEAD raised."""
        return seen_in(message, await self._metadata(message, sent_after))

    async def cancelled(self, message: TaskMessage, fresh_s: float) -> bool:
        """Whether ``message``'s workflow is cancelled (or gone), as learned at most ``fresh_s``
        ago; raises what the HEAD raised (transient: the caller asks again later)."""
        return cancelled_by(message, await self._metadata(message, self.clock() - fresh_s))

    async def _metadata(self, message: TaskMessage, sent_after: float) -> Metadata:
        key = (message.workflow_id, message.incarnation)
        latest = self._latest.get(key)
        if latest is None or latest[0] < sent_after or _failed(latest[1]):
            latest = (self.clock(), asyncio.create_task(self._head(message.workflow_id)))
            self.heads += 1
            self._latest[key] = latest
            self._forget_old()
        return await asyncio.shield(latest[1])  # a caller that stops never cancels a shared HEAD

    async def _head(self, workflow_id: str) -> Metadata:
        return await state_metadata_or_none(self.storage, workflow_id)

    def _forget_old(self) -> None:
        if len(self._latest) > 64:
            now = self.clock()
            for old in [k for k, (t, _) in self._latest.items() if now - t > _FORGET_AFTER_S]:
                del self._latest[old]


def _failed(task: asyncio.Task[Metadata]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)
