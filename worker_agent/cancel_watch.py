"""Stopping a running task when its workflow is cancelled (docs/worker.md, "Cancel").

Each running task looks at its workflow's state (one HEAD, ``workflow_check.workflow_cancelled``)
after ``cadence.cancel_check_interval(age)``: every ``--cancel-check-s`` while it is young, then a
quarter of its age, at most ``--cancel-check-max-s``. The worker's running tasks of one workflow
share the answers (``CancelChecks``): a task whose turn comes takes an answer at most half its
interval old, or the one in flight, so a fan-out on a many-slot worker makes about two HEADs per
workflow per interval, not one per task. A task alone on its workflow sees a cancel within one
interval; one that shares answers within one and a half (a check lands in every interval, and the
first that comes half an interval after the cancel acts on an answer sent after it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from shared.messages import TaskMessage
from shared.storage.ports import Storage
from worker_agent.cadence import cancel_check_interval
from worker_agent.config import WorkerSettings
from worker_agent.runner import StopRequest
from worker_agent.telemetry import TaskLogger
from worker_agent.workflow_check import workflow_cancelled

_Key = tuple[str, int | None]
"""A workflow of one incarnation: its messages get the same answer."""

_FORGET_AFTER_S = 600.0
"""Answers older than this are dropped (their tasks ended long ago): the map stays small."""


class CancelChecks:
    """The latest cancel answer per workflow, shared by the worker's running tasks."""

    def __init__(self, storage: Storage, clock: Callable[[], float] = time.monotonic) -> None:
        self.storage = storage
        self.clock = clock
        self.heads = 0
        """HEADs of state blobs made, for tests and the benchmark."""
        self._seen: dict[_Key, tuple[float, bool]] = {}
        """Workflow -> (when the HEAD that answered was sent, cancelled?)."""
        self._inflight: dict[_Key, asyncio.Task[bool]] = {}

    async def cancelled(self, message: TaskMessage, fresh_s: float) -> bool:
        """Whether ``message``'s workflow is cancelled (or gone), as learned at most ``fresh_s``
        ago; raises what the HEAD raised (transient: the caller asks again later)."""
        key = (message.workflow_id, message.incarnation)
        now = self.clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] <= fresh_s:
            return seen[1]
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(workflow_cancelled(self.storage, message))
            self.heads += 1
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._learned(key, now, done))
        return await asyncio.shield(task)  # a stopped watcher never cancels the shared HEAD

    def _learned(self, key: _Key, sent: float, task: asyncio.Task[bool]) -> None:
        self._inflight.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            return
        self._seen[key] = (sent, task.result())
        if len(self._seen) > 64:
            now = self.clock()
            for old in [k for k, (t, _) in self._seen.items() if now - t > _FORGET_AFTER_S]:
                del self._seen[old]


async def watch_cancel(
    checks: CancelChecks,
    settings: WorkerSettings,
    message: TaskMessage,
    stop: StopRequest,
    log: TaskLogger,
) -> None:
    """Request ``stop`` ("cancelled") once the task's workflow is seen cancelled; runs until the
    task ends (the caller cancels it)."""
    started = time.monotonic()
    while stop.reason is None:
        interval = cancel_check_interval(settings, time.monotonic() - started)
        await asyncio.sleep(interval)
        try:
            cancelled = await checks.cancelled(message, fresh_s=interval / 2)
        except Exception as exc:  # transient: the next check will tell
            log.debug("cancel check failed: %s", exc)
            continue
        if cancelled:
            log.info("workflow cancelled: stopping the task")
            stop.request("cancelled")
