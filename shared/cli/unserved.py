"""While a command waits on a workflow: say once, plainly, when its queued tasks sit on a queue no
live worker polls (a queue no pool serves, a typo like ``gpus``), and how to start a worker for
it. Without this, ``dagq submit --wait`` and ``dagq watch`` printed "queued 1" forever and only
``dagq doctor`` explained why.

The check costs nothing until tasks have been queued for ``GRACE_S``; then at most one look at the
worker registry (and the task table, for workflows small enough to poll it) every ``EVERY_S``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.client import Client, Workflow
from shared.errors import DagqError
from shared.states import TaskState

GRACE_S = 10.0
"""How long tasks may wait queued before their queues are looked at (a worker polling an idle
queue backs off for up to a few seconds)."""
EVERY_S = 10.0
"""The least time between two looks."""
MAX_TASKS = 2000
"""Largest workflow whose task table is read for its queued tasks' queues."""


class UnservedQueues:
    """Watches one workflow's snapshots; ``check`` each one."""

    def __init__(
        self,
        client: Client,
        say: Callable[[str], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client, self._say, self._clock = client, say, clock
        self._queued_since: float | None = None
        self._looked = -1e18
        self.warned: set[str] = set()

    def check(self, wf: Workflow) -> None:
        now = self._clock()
        if wf.is_terminal or not wf.counts.get(TaskState.QUEUED, 0):
            self._queued_since = None
            return
        if self._queued_since is None:
            self._queued_since = now
        if now - self._queued_since < GRACE_S or now - self._looked < EVERY_S:
            return
        self._looked = now
        if wf.total > MAX_TASKS:
            return
        try:
            tasks = wf.tasks or self._client.get(wf.id).tasks
            waiting = {t.queue for t in tasks.values() if t.state == TaskState.QUEUED}
            served = {
                queue
                for worker in self._client.workers().workers
                if worker.status == "alive"
                for queue in worker.queues
            }
        except DagqError:  # advisory: the wait goes on as before
            return
        for queue in sorted(waiting - served - self.warned):
            self.warned.add(queue)
            self._say(
                f"dagq: tasks wait on queue {queue!r}, which no live worker polls: start one with"
                f" `dagq-worker {queue}` (on Azure: a pool that serves it); `dagq doctor` says more"
            )
