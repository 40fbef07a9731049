"""Tasks on queues no worker serves.

While a command waits on a workflow: say once, plainly, when its queued tasks sit on a queue no
live worker polls (a queue no pool serves, a typo like ``gpus``), and how to start a worker for
it. Without this, ``dagq submit --wait`` and ``dagq watch`` printed "queued 1" forever and only
``dagq doctor`` explained why.

The check costs nothing until tasks have been queued for ``GRACE_S``; then at most one look at the
worker registry (and the task table, for workflows small enough to poll it) every ``EVERY_S``.

Before that, ``dagq validate`` and ``dagq submit`` warn of a queue no worker of the deployment has
ever polled (``warn_never_served``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

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


def never_served(client: Client, queues: Iterable[str]) -> tuple[list[str], list[str]] | None:
    """The queues of ``queues`` no worker of this deployment's registry (alive, or lost within
    the days it keeps them) ever polled, and the queues it did: ``None`` when the registry cannot
    be read (the check is advisory)."""
    try:
        workers = client.workers().workers
    except DagqError:
        return None
    served = sorted({queue for worker in workers for queue in worker.queues})
    return sorted(set(queues) - set(served)), served


def warn_never_served(client: Client, queues: Iterable[str], say: Callable[[str], None]) -> None:
    """Say, for each queue no worker of this deployment ever polled (a typo like ``gpus``, a
    queue no pool serves), that its tasks will wait until one does: a warning, never a failure
    (a pool that scales from zero starts its first worker once tasks wait)."""
    found = never_served(client, queues)
    if found is None:
        return
    missing, served = found
    for queue in missing:
        say(
            f"dagq: warning: no worker has ever polled queue {queue!r} in this deployment"
            f" (queues served here: {', '.join(served) or 'none yet'}); its tasks will wait until"
            f" one does: check the name, or start one with `dagq-worker {queue}`"
        )
