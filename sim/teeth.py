"""The planted bugs that are not faults of the simulated storage: small patches of the code under
test, applied only for the run that asks for them (``sim.faults.Tooth``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from shared.api import task_reads
from shared.coordinator import update as coordinator_update
from shared.coordinator.backlog import event_backlog_s
from shared.coordinator.leadership import Leadership
from shared.coordinator.update import UpdateResult, WorkflowUpdater
from shared.engine.step import Step
from shared.index_row import IndexRow
from shared.names import ResourceNames
from shared.signing import Verifier
from sim.faults import Tooth

Patch = Callable[[Any, str, Any], None]
"""``patch(owner, name, value)``: set ``owner.name`` to ``value`` for the run."""


@contextlib.contextmanager
def patching() -> Iterator[Patch]:
    """A ``patch`` whose every change is undone on leaving, the last first."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    try:
        yield patch
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


@contextlib.contextmanager
def planted(teeth: frozenset[Tooth]) -> Iterator[None]:
    """Apply the code patches of ``teeth`` (storage and worker teeth act elsewhere)."""
    with patching() as patch:
        _plant(teeth, patch)
        yield


def _plant(teeth: frozenset[Tooth], patch: Patch) -> None:
    if Tooth.ACK_BEFORE_FLUSH in teeth:
        update = WorkflowUpdater.update

        async def acking(self: WorkflowUpdater, workflow_id: str, envelopes: Any, *a: Any,
                         **kw: Any) -> UpdateResult:  # fmt: skip
            result: UpdateResult = await update(self, workflow_id, envelopes, *a, **kw)
            return UpdateResult(done=list(envelopes), row=result.row)

        patch(WorkflowUpdater, "update", acking)
    if Tooth.NO_SIGNATURE_CHECK in teeth:
        patch(Verifier, "check", lambda self, message: None)
    if Tooth.SKIP_LEASE_CHECK in teeth:
        take = Leadership.take

        async def regardless(self: Leadership) -> bool:
            await take(self)
            return True  # a pass runs whether or not this coordinator got the lease

        patch(Leadership, "take", regardless)
        patch(Leadership, "ok", lambda self: True)  # ...and goes on writing if it loses it
    if Tooth.UNVERSIONED_PROJECTION in teeth:
        patch(IndexRow, "newer_than", lambda self, stored: True)
    _plant_issue30_teeth(teeth, patch)
    if Tooth.RETRY_UNBOUNDED in teeth:
        fail = Step.fail

        def generous(self: Step, task: int, *a: Any, **kw: Any) -> None:
            bases = self.st.base_attempt
            had = task in bases
            bases[task] = bases.get(task, 0) + 1  # one attempt fewer counted: one more allowed
            try:
                fail(self, task, *a, **kw)
            finally:
                if had:
                    bases[task] -= 1
                else:
                    bases.pop(task, None)

        patch(Step, "fail", generous)


def _forward_deadletter_blob(received_at: float, message_id: str) -> str:
    """A dead letter's name in forward time: a day lists oldest first."""
    day = time.strftime("%Y-%m-%d", time.gmtime(received_at))
    return f"{day}/{int(received_at * 1000):013d}-{message_id}.json"


def _plant_issue30_teeth(teeth: frozenset[Tooth], patch: Callable[[Any, str, Any], None]) -> None:
    """The teeth of issue 30's items 3, 4 and 5 (``sim.backlog_repairs``, ``sim.readers``)."""
    if Tooth.NO_BACKLOG_GRACE in teeth:

        async def ignored(*a: Any, **kw: Any) -> float:
            await event_backlog_s(*a, **kw)  # the peek still happens; its answer is dropped
            return 0.0

        patch(coordinator_update, "event_backlog_s", ignored)
    if Tooth.OLDEST_FIRST_DEAD_LETTERS in teeth:
        patch(ResourceNames, "deadletter_blob", staticmethod(_forward_deadletter_blob))
    if Tooth.TRUST_ANY_REGISTRY_ROW in teeth:
        patch(task_reads, "row_speaks_for", lambda row_worker, named: True)
