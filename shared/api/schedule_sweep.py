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

A slot's run id is noted in ``ScheduleRecord.starting`` before its submit, and taken out with
the note of the slot: a submit that failed half-way (its roots sent or its state created, its
index row or activate event not) is submitted again by the next sweep even if the schedule was
paused meanwhile or the slot has left the catch-up (simulation seed 125: else nobody completes
it, and a pending run without its row is seen by no sweep).
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
    from shared.names import ResourceNames
    from shared.signing import Signer
    from shared.states import WorkflowStatus
    from shared.storage.ports import Storage
    from shared.storage.schedules import ScheduleRecord
    from shared.views import ScheduleDeleted

log = logging.getLogger("dagq.schedules")

SCHEDULE_CONCURRENCY = 4
"""Schedules handled at once by one sweep."""

DELETE_TRIES = 5
"""Reads of a schedule a delete makes while sweeps keep changing it."""


async def run_schedules(
    storage: Storage,
    now: float,
    *,
    partitions: int = 1,
    signer: Signer | None = None,
    max_expansion_width: int | None = None,
    names: ResourceNames | None = None,
) -> int:
    """Start every due slot of every schedule; return how many runs were submitted. With the
    deployment's ``names``, a run's plain roots are dispatched by its submit (as the API's)."""
    records = await storage.schedules.list()
    gate = asyncio.Semaphore(SCHEDULE_CONCURRENCY)
    starter = _Starter(storage, now, partitions, signer, max_expansion_width, names)

    async def one(record: ScheduleRecord) -> int:
        async with gate:
            try:
                return await starter.run(record)
            except Exception as exc:  # one schedule's trouble never stops the others
                log.warning("schedule %s: sweep failed: %r", record.name, exc)
                return 0

    return sum(await asyncio.gather(*(one(r) for r in records if not r.paused or r.starting)))


async def finish_and_delete(
    storage: Storage,
    name: str,
    *,
    now: float,
    partitions: int = 1,
    signer: Signer | None = None,
    max_expansion_width: int | None = None,
    names: ResourceNames | None = None,
) -> ScheduleDeleted:
    """Delete a schedule (``shared.api.schedules.delete``), first submitting again the runs it
    notes as starting: no sweep would finish them after. The delete holds only if the schedule
    is still as read (its ETag): a sweep that noted a new start meanwhile makes it read again
    and finish that one too. A storage failure raises (nothing is deleted: try again);
    ConflictError if the schedule kept changing."""
    from shared.api import schedules

    starter = _Starter(storage, now, partitions, signer, max_expansion_width, names)
    for _ in range(DELETE_TRIES):
        record = await storage.schedules.get(name)
        if record is None:
            return await schedules.delete(storage, name)
        for workflow_id in record.starting:
            await starter._start(record, workflow_id)
        try:
            return await schedules.delete(storage, name, etag=record.etag)
        except StaleStateError:  # changed since the read: read it again
            continue
    raise ConflictError(f"schedule {name!r} kept changing while it was deleted; try again")


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
        names: ResourceNames | None,
    ) -> None:
        self.storage = storage
        self.now = now
        self.partitions = partitions
        self.signer = signer
        self.width = max_expansion_width
        self.names = names

    async def run(self, record: ScheduleRecord) -> int:
        spec = record.spec
        slots = [] if record.paused else due_slots(
            spec.cron, spec.timezone, after=record.after, now=self.now, limit=spec.catch_up
        )  # fmt: skip
        if not slots and not record.starting:
            return 0
        runs = list(record.runs)
        note: str | None = None
        submitted = 0
        done: list[str] = []
        for workflow_id in record.starting:  # begun by an earlier sweep, never answered
            refused = await self._start(record, workflow_id)
            note = refused or note
            done.append(workflow_id)
            if refused is None and workflow_id not in runs:  # the later slots' previous run
                runs.append(workflow_id)  # (simulation seed 3709840: forbid ran two at once)
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
            marked = await self._mark(record, workflow_id)
            if marked is None:  # paused, deleted or created anew meanwhile: start nothing more
                break
            record = marked
            refused = await self._start(record, workflow_id)
            done.append(workflow_id)
            if refused is not None:
                note = refused
                continue
            submitted += 1
            if workflow_id not in runs:
                runs.append(workflow_id)
        last = slots[-1] if slots else record.last_slot
        await self._note(record, last, runs[-KEPT_RUNS:], note, done)
        return submitted

    async def _start(self, record: ScheduleRecord, workflow_id: str) -> str | None:
        """Submit ``workflow_id``; the note of a slot passed over (its definition no longer
        compiles, or its id holds another definition), or None. A storage failure raises."""
        try:
            await self._submit(record, workflow_id)
        except (DefinitionError, ConflictError) as exc:  # no longer compiles, id taken
            note = f"{workflow_id} not started: {exc}"[:1000]
            log.warning("schedule %s: %s", record.name, note)
            return note
        return None

    async def _mark(self, record: ScheduleRecord, workflow_id: str) -> ScheduleRecord | None:
        """Note ``workflow_id`` in ``starting`` before its submit (under the ETag). None if the
        schedule was paused, deleted or created anew meanwhile."""
        current: ScheduleRecord | None = record
        for _ in range(3):
            if current is None or current.created_at != record.created_at or current.paused:
                return None
            if workflow_id in current.starting:
                return current
            marked = replace(current, starting=[*current.starting, workflow_id])
            try:
                return replace(marked, etag=await self.storage.schedules.update(marked))
            except StaleStateError:
                current = await self.storage.schedules.get(record.name)
            except NotFoundError:
                return None
        raise StaleStateError(f"schedule {record.name!r} keeps changing: the next sweep starts it")

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
            partitions=self.partitions, signer=self.signer, names=self.names,
        )  # fmt: skip

    async def _note(
        self,
        record: ScheduleRecord,
        slot: float | None,
        runs: list[str],
        note: str | None,
        done: list[str],
    ) -> None:
        """Record the latest slot handled and take the runs started (``done``) out of
        ``starting`` (under the ETag; a schedule changed meanwhile is read again and the slot
        noted on it, unless it was deleted or created anew)."""
        current: ScheduleRecord | None = record
        for _ in range(3):
            if current is None or current.created_at != record.created_at:
                return
            merged = runs + [r for r in current.runs if r not in runs]
            last = current.last_slot if slot is None else max(slot, current.last_slot or slot)
            noted = replace(
                current,
                last_slot=last,
                runs=sorted(merged)[-KEPT_RUNS:],
                note=note,
                starting=[r for r in current.starting if r not in done],
            )
            try:
                await self.storage.schedules.update(noted)
                return
            except StaleStateError:
                current = await self.storage.schedules.get(record.name)
            except NotFoundError:
                return
        log.warning("schedule %s: could not note slot %s (the next sweep will)", record.name, slot)
