"""The schedules' sweep: start the runs of due slots (issue 29).

It runs in partition 0's sweeps, under that partition's lease (``Coordinator(after_sweeps=...)``,
wired by ``shared.api.triggers``), with the coordinator's clock. For every schedule not paused,
the due slots are the latest ``catch_up`` of those after ``ScheduleRecord.after`` up to now
(``shared.definition.schedule.due_slots``); each slot's run is submitted with the id
``{name}-{UTC slot}`` through the API's idempotent submit, so a slot is started once whatever
happens: two instances sweeping at once submit the same id (the second finds the first's
workflow), and a sweep killed after a submit and before it noted the slot makes the next sweep
submit that id again, which finds it.

``forbid`` skips a slot while the schedule's previous run is active; ``replace`` cancels that run
first. The previous run is the previous slot's (whether or not a sweep lived to note it) or the
latest one noted. A slot whose definition no longer compiles, or whose id holds another
definition, is noted on the schedule (``schedule show``) and passed over: it never blocks the
later slots. Any other failure (storage) leaves the slot un-noted, so the next sweep submits it
again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from shared.definition.schedule import KEPT_RUNS, due_slots, run_id
from shared.errors import ConflictError, DefinitionError, NotFoundError, StaleStateError

if TYPE_CHECKING:
    from shared.signing import Signer
    from shared.states import WorkflowStatus
    from shared.storage.ports import Storage
    from shared.storage.schedules import ScheduleRecord

log = logging.getLogger("dagq.schedules")

SCHEDULE_CONCURRENCY = 4
"""Schedules handled at once by one sweep."""


async def run_schedules(
    storage: Storage,
    now: float,
    *,
    partitions: int = 1,
    signer: Signer | None = None,
    max_expansion_width: int | None = None,
) -> int:
    """Start every due slot of every schedule; return how many runs were submitted."""
    records = await storage.schedules.list()
    gate = asyncio.Semaphore(SCHEDULE_CONCURRENCY)
    starter = _Starter(storage, now, partitions, signer, max_expansion_width)

    async def one(record: ScheduleRecord) -> int:
        async with gate:
            try:
                return await starter.run(record)
            except Exception as exc:  # one schedule's trouble never stops the others
                log.warning("schedule %s: sweep failed: %r", record.name, exc)
                return 0

    return sum(await asyncio.gather(*(one(r) for r in records if not r.paused)))


def _at(slot: float) -> str:
    return datetime.fromtimestamp(slot, UTC).strftime("%Y-%m-%d %H:%M UTC")


class _Starter:
    def __init__(
        self,
        storage: Storage,
        now: float,
        partitions: int,
        signer: Signer | None,
        max_expansion_width: int | None,
    ) -> None:
        self.storage = storage
        self.now = now
        self.partitions = partitions
        self.signer = signer
        self.width = max_expansion_width

    async def run(self, record: ScheduleRecord) -> int:
        spec = record.spec
        slots = due_slots(
            spec.cron, spec.timezone, after=record.after, now=self.now, limit=spec.catch_up
        )
        if not slots:
            return 0
        runs = list(record.runs)
        note: str | None = None
        submitted = 0
        for slot in slots:
            workflow_id = run_id(spec.name, slot)
            active = None if spec.concurrency == "allow" else await self._active(record, runs, slot)
            if active is not None:
                previous, status = active
                if spec.concurrency == "forbid":
                    note = f"slot {_at(slot)} skipped: {previous} was still {status}"
                    log.info("schedule %s: %s", spec.name, note)
                    continue
                await self._cancel(previous, workflow_id)
            try:
                await self._submit(record, workflow_id)
            except (DefinitionError, ConflictError) as exc:  # no longer compiles, id taken
                note = f"slot {_at(slot)} not started: {exc}"[:1000]
                log.warning("schedule %s: %s", spec.name, note)
                continue
            submitted += 1
            if workflow_id not in runs:
                runs.append(workflow_id)
        await self._note(record, slots[-1], runs[-KEPT_RUNS:], note)
        return submitted

    async def _active(
        self, record: ScheduleRecord, runs: list[str], slot: float
    ) -> tuple[str, WorkflowStatus] | None:
        """The schedule's previous run if it is still active: the run of the slot before
        ``slot`` (started even when a killed sweep did not note it) or the latest run noted."""
        spec = record.spec
        before = due_slots(spec.cron, spec.timezone, after=float("-inf"), now=slot - 1, limit=1)
        candidates = [run_id(spec.name, s) for s in before] + runs[-1:]
        for previous in dict.fromkeys(candidates):
            status = await self._status(previous)
            if status is not None and not status.is_terminal:
                return previous, status
        return None

    async def _status(self, workflow_id: str) -> WorkflowStatus | None:
        from shared.codec.metadata import status_from_metadata

        try:
            return status_from_metadata(await self.storage.workflows.state_metadata(workflow_id))
        except NotFoundError:
            return None  # purged: nothing runs

    async def _cancel(self, previous: str, workflow_id: str) -> None:
        from shared.api import service

        reason = f"replaced by {workflow_id} (schedule concurrency: replace)"
        await service.cancel(self.storage, previous, reason=reason, signer=self.signer)

    async def _submit(self, record: ScheduleRecord, workflow_id: str) -> None:
        from shared.api import service
        from shared.api.schedules import compile_spec

        wf, encoded = await asyncio.to_thread(
            compile_spec, record.spec, max_expansion_width=self.width
        )
        await service.submit(
            self.storage, wf, now=self.now, workflow_id=workflow_id, encoded=encoded,
            partitions=self.partitions, signer=self.signer,
        )  # fmt: skip

    async def _note(
        self, record: ScheduleRecord, slot: float, runs: list[str], note: str | None
    ) -> None:
        """Record the latest slot handled (under the ETag; a schedule changed meanwhile is read
        again and the slot noted on it, unless it was deleted or created anew)."""
        current: ScheduleRecord | None = record
        for _ in range(3):
            if current is None or current.created_at != record.created_at:
                return
            merged = runs + [r for r in current.runs if r not in runs]
            noted = replace(
                current,
                last_slot=max(slot, current.last_slot or slot),
                runs=sorted(merged)[-KEPT_RUNS:],
                note=note,
            )
            try:
                await self.storage.schedules.update(noted)
                return
            except StaleStateError:
                current = await self.storage.schedules.get(record.name)
            except NotFoundError:
                return
        log.warning("schedule %s: could not note slot %s (the next sweep will)", record.name, slot)
