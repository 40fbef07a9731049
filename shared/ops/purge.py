"""Purge: delete finished workflows for good — ``DELETE /api/workflows/{id}`` and ``POST
/api/purge`` (``dagq purge``).

One workflow is purged in this order, each step idempotent:

1. write its purge marker (``_purging/{id}`` in the workflows container, holding its creation time
   and its incarnation);
2. delete its index row: from here on it is no longer listed, so it is never *listed but broken*;
3. delete its state blob *only if it is still the version whose terminal status was checked*
   (If-Match on the ETag read with that status), then its definition blob only if that is still
   the purged incarnation's (its metadata; If-Match on the ETag read with it);
4. delete its incarnation's outputs-container blobs (``{id}/{incarnation}/``: outputs, logs,
   upstream bundles, claims; for a workflow from before state version 6, the flat layout's
   ``{id}/{task}/{attempt}/...``), never another incarnation's: the id may have been submitted
   again since step 3;
5. delete the index row again (a write-behind projection may have landed after step 2);
6. delete the marker.

A purge interrupted anywhere leaves the marker, and every later purge (the same DELETE, or any
``dagq purge``) finishes the marked workflows first. Only terminal workflows (completed, failed,
cancelled, as their state blob says) are purged: 409 otherwise. A workflow that stops being
terminal meanwhile (a retry applied after the check, or after an interrupted purge) is never
deleted: step 3's condition fails, or a marked workflow's state is found running again (by a bulk
purge, or by the same DELETE tried again); then the purge gives up on it, puts its index row back
and removes the marker. Nothing of a running
workflow is deleted before step 3, so it loses nothing. A marker whose incarnation is not the
state's (the id was submitted again after an interrupted purge's step 3) is finished without
touching the new workflow: the purged incarnation's blobs and row go, the marker too. The first
step of a bulk purge also deletes result cache entries past their ttl (a cache entry owns a copy
of its output, so purging the workflow that computed it never breaks a later hit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from shared.codec.metadata import (
    blob_incarnation_from_metadata,
    incarnation_from_metadata,
    status_from_metadata,
)
from shared.codec.state import decode_state
from shared.definition.schedule import slot_of_run
from shared.deployment import partition_from_metadata
from shared.engine.projection import index_row
from shared.errors import ConflictError, NotFoundError, StaleStateError
from shared.limits import CACHE_SCAN_ROTATE_S
from shared.names import ResourceNames, check_workflow_id
from shared.readback.workflow_reads import (
    forget_definition,
    read_workflow,
    state_definition,
)
from shared.states import WorkflowStatus
from shared.storage.ports import PurgeMark
from shared.storage.tolerated import TOLERATED, Kind, describe
from shared.views import PurgedItem, PurgedView, PurgeReport

if TYPE_CHECKING:
    from shared.storage.ports import IndexRow, Storage

TERMINAL = frozenset({WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED})
PURGE_CONCURRENCY = 16
"""Workflows one bulk purge request deletes at once."""


def purge_mark(created_at: float, metadata: Mapping[str, str]) -> PurgeMark:
    """The marker of a workflow created at ``created_at`` whose state blob has ``metadata``."""
    scoped = blob_incarnation_from_metadata(metadata) is not None
    return PurgeMark(created_at, incarnation_from_metadata(metadata), scoped)


async def delete_outputs(storage: Storage, workflow_id: str, mark: PurgeMark) -> int:
    """Step 4: the purged incarnation's outputs-container blobs, and no other's; how many."""
    incarnation = mark.blob_incarnation
    if incarnation is not None:
        prefix = ResourceNames.outputs_prefix(workflow_id, incarnation)
        return await storage.outputs.delete_prefix(prefix)
    # The flat layout (a workflow from before state version 6): four segments, never a name
    # of a later incarnation's (five).
    return await storage.outputs.delete_prefix(
        ResourceNames.outputs_prefix(workflow_id), segments=ResourceNames.FLAT_SEGMENTS
    )


def _other_incarnation(mark: PurgeMark, metadata: Mapping[str, str]) -> bool:
    """Whether the state blob (its ``metadata``) is of another incarnation than the marked one:
    the id was submitted again after the marked purge deleted its state."""
    return mark.incarnation is not None and incarnation_from_metadata(metadata) != mark.incarnation


async def _finish_other(storage: Storage, workflow_id: str, mark: PurgeMark) -> int:
    """Finish a marked purge whose id holds another incarnation now: the marked one's blobs and
    row go, the marker too; the workflow the id holds now is not touched."""
    deleted = await delete_outputs(storage, workflow_id, mark)
    await storage.index.delete(workflow_id, mark.created_at)
    await storage.workflows.unmark_purge(workflow_id)
    return deleted


async def finish_purge(
    storage: Storage, workflow_id: str, mark: PurgeMark, etag: str | None
) -> int:
    """Steps 1-6 above for one workflow whose state blob was terminal at ``etag`` (None: it is
    gone already); returns how many output blobs were deleted. ConflictError (the workflow and
    its row restored, the marker removed) if the state changed since."""
    created_at = mark.created_at
    await storage.workflows.mark_purge(workflow_id, mark)
    await storage.index.delete(workflow_id, created_at)
    try:
        if etag is not None:
            await storage.workflows.delete(workflow_id, etag, definition=False)
        if etag is not None or await _no_state(storage, workflow_id):
            await _delete_definition(storage, workflow_id, mark)
    except StaleStateError:
        await _give_up(storage, workflow_id)
        raise ConflictError(
            f"workflow {workflow_id!r} changed while it was being purged (retried?): it was "
            "left as it is; purge it again once it has finished"
        ) from None
    deleted = await delete_outputs(storage, workflow_id, mark)
    await storage.index.delete(workflow_id, created_at)
    await storage.workflows.unmark_purge(workflow_id)
    return deleted


async def _no_state(storage: Storage, workflow_id: str) -> bool:
    """Whether the id holds no state (a purge past its state delete: another workflow's state
    there now is not to be touched)."""
    try:
        await storage.workflows.state_properties(workflow_id)
    except NotFoundError:
        return True
    return False


async def _delete_definition(storage: Storage, workflow_id: str, mark: PurgeMark) -> None:
    """Delete the definition blob only if it is the purged incarnation's (or from before
    definitions kept theirs), and only while it still is (If-Match on the ETag read with it): a
    re-submit of the id may have created its own, or made the purged one's its own (simulation
    seeds 650, 2192, 2136 and 5168)."""
    try:
        incarnation, etag = await storage.workflows.definition_properties(workflow_id)
    except NotFoundError:
        return
    if incarnation is None or incarnation == mark.incarnation:
        await storage.workflows.delete_definition(workflow_id, etag)


async def _give_up(storage: Storage, workflow_id: str) -> None:
    """Leave a workflow that is no longer terminal as it is: its index row back, no marker."""
    stored = await storage.workflows.read_state(workflow_id)
    wf = await state_definition(storage, workflow_id, stored.data)
    row = replace(
        index_row(wf, decode_state(stored.data, wf)),
        partition=partition_from_metadata(stored.metadata),
    )
    await storage.index.create(row)  # the purge deleted it (a projection never creates one)
    await storage.workflows.unmark_purge(workflow_id)


async def _terminal_etag(
    storage: Storage, workflow_id: str
) -> tuple[WorkflowStatus | None, str, dict[str, str]]:
    """The state blob's status, the ETag and the metadata of that same version (one HEAD)."""
    metadata, etag = await storage.workflows.state_properties(workflow_id)
    return status_from_metadata(metadata), etag, metadata


async def resume_purge(storage: Storage, workflow_id: str, mark: PurgeMark) -> bool:
    """Finish an interrupted purge, unless its workflow is not terminal any more (retried after
    the interruption): then it is left as it is and the marker removed. If the id holds another
    incarnation now, only the marked one's blobs and row go. True if purged."""
    try:
        status, etag, metadata = await _terminal_etag(storage, workflow_id)
    except NotFoundError:
        await finish_purge(storage, workflow_id, mark, None)  # past step 3 already
        return True
    if _other_incarnation(mark, metadata):
        await _finish_other(storage, workflow_id, mark)
        return True
    if status not in TERMINAL:
        await _give_up(storage, workflow_id)
        return False
    try:
        await finish_purge(storage, workflow_id, purge_mark(mark.created_at, metadata), etag)
    except ConflictError:
        return False
    forget_definition(storage, workflow_id)
    return True


READ_TRIES = 3
"""Reads of a workflow's status and state that a purge makes before it gives up on seeing one
workflow in both (the id purged and submitted again in between, each time)."""


async def purge_workflow(storage: Storage, workflow_id: str) -> PurgedView:
    """Purge one terminal workflow, or finish its interrupted purge.

    NotFoundError if there is no such workflow (or it is purged already); ConflictError if it is
    still pending, running or cancelling, or its submit never completed.
    """
    check_workflow_id(workflow_id)
    for _ in range(READ_TRIES):
        try:
            status, etag, metadata = await _terminal_etag(storage, workflow_id)
            _wf, state = await read_workflow(storage, workflow_id)  # its creation time is fixed
        except NotFoundError:
            return await _purge_without_state(storage, workflow_id)
        # Both reads of one workflow: the id may have been purged and submitted again between
        # them (simulation seed 993), and a mark of the new creation time with the old
        # incarnation purged the new workflow's row (and, from its ETag, more).
        if state.incarnation == incarnation_from_metadata(metadata):
            break
    else:
        raise ConflictError(
            f"workflow {workflow_id!r} was purged and submitted again while it was read: try again"
        )
    await _refuse_a_run_still_starting(storage, workflow_id)
    if status not in TERMINAL:
        mark = (await storage.workflows.purge_marks()).get(workflow_id)
        if mark is not None and _other_incarnation(mark, metadata):
            # A purge of the id's earlier workflow, interrupted after its state delete: finish
            # it (that workflow's blobs and row), leaving this one alone.
            await _finish_other(storage, workflow_id, mark)
        elif mark is not None:
            # An earlier try of this purge was interrupted after it deleted the index row, and
            # the workflow was retried since: give that try up (row back, marker removed).
            await _give_up(storage, workflow_id)
        raise ConflictError(
            f"workflow {workflow_id!r} is {status}: only completed, failed or cancelled"
            " workflows can be purged (cancel it first)"
        )
    deleted = await finish_purge(storage, workflow_id, purge_mark(state.created_at, metadata), etag)
    forget_definition(storage, workflow_id)
    return PurgedView(id=workflow_id, status=str(state.status), blobs_deleted=deleted)


async def _refuse_a_run_still_starting(storage: Storage, workflow_id: str) -> None:
    """ConflictError if ``workflow_id`` is a schedule's run whose sweep has not seen its submit
    through (``ScheduleRecord.starting``): the next sweep submits it again, and would start the
    slot a second time once it was purged (simulation seed 677). One table read, for ids named
    as a schedule's runs (``{name}-{UTC slot}``) only."""
    name = workflow_id.rpartition("-")[0]
    if slot_of_run(name, workflow_id) is None:
        return
    record = await storage.schedules.get(name)
    if record is not None and workflow_id in record.starting:
        raise ConflictError(
            f"workflow {workflow_id!r} is a run of schedule {name!r} whose start its sweep has"
            " not seen through yet: try again after the next sweep"
        )


async def _purge_without_state(storage: Storage, workflow_id: str) -> PurgedView:
    marks = await storage.workflows.purge_marks()
    if workflow_id in marks:
        try:
            await storage.workflows.state_properties(workflow_id)
        except NotFoundError:
            deleted = await finish_purge(storage, workflow_id, marks[workflow_id], None)
            return PurgedView(id=workflow_id, status="purging", blobs_deleted=deleted)
        # The id was submitted again since this state-less look: the new workflow stays; only
        # the purged one's blobs, row and marker go (seed 426 of the simulation).
        deleted = await _finish_other(storage, workflow_id, marks[workflow_id])
        return PurgedView(id=workflow_id, status="purging", blobs_deleted=deleted)
    try:
        await storage.workflows.read_definition(workflow_id)
    except NotFoundError:
        raise NotFoundError(f"workflow {workflow_id!r} not found") from None
    raise ConflictError(
        f"workflow {workflow_id!r} was never completely submitted (it has a definition but no"
        f" state): submit the same definition again with ?id={workflow_id} to complete it"
    )


def is_candidate(row: IndexRow, cutoff: float, statuses: Collection[WorkflowStatus]) -> bool:
    """Whether the index says ``row``'s workflow finished before ``cutoff`` in one of
    ``statuses`` (its state blob is checked again before anything is deleted)."""
    finished = row.finished_at if row.finished_at is not None else row.updated_at
    return row.status in statuses and row.status in TERMINAL and finished < cutoff


def _item(row: IndexRow) -> PurgedItem:
    return PurgedItem(
        id=row.workflow_id, name=row.name, status=str(row.status), finished_at=row.finished_at
    )


async def purge_many(
    storage: Storage,
    *,
    now: float,
    older_than_s: float,
    statuses: Collection[WorkflowStatus] = TERMINAL,
    dry_run: bool = False,
    limit: int = 100,
    continuation: str | None = None,
) -> PurgeReport:
    """One step of a bulk purge: finish interrupted purges, then purge (or, with ``dry_run``,
    list) the workflows of one index page that finished more than ``older_than_s`` ago. Pass
    ``next`` back to go on; ``next`` is None at the end."""
    marks = await storage.workflows.purge_marks(limit)
    if not dry_run:
        for workflow_id, mark in marks.items():
            await resume_purge(storage, workflow_id, mark)
    cutoff = now - older_than_s
    page = await storage.index.created_before(cutoff, limit=limit, continuation=continuation)
    chosen = [row for row in page.rows if is_candidate(row, cutoff, statuses)]
    purged = chosen if dry_run else await _purge_rows(storage, chosen)
    expired, cache_problem = (
        await _expire_cache(storage, now, limit, dry_run) if continuation is None else ([], None)
    )
    return PurgeReport(
        dry_run=dry_run,
        older_than_s=older_than_s,
        statuses=sorted(str(s) for s in statuses),
        workflows=[_item(row) for row in purged],
        resumed=sorted(marks),
        next=page.next,
        cache_entries_expired=len(expired),
        cache_problem=cache_problem,
    )


async def _expire_cache(
    storage: Storage, now: float, limit: int, dry_run: bool
) -> tuple[list[str], str | None]:
    """The expired cache entries (deleted unless ``dry_run``), and what went wrong if that failed:
    best effort, so that a cache the app cannot reach never stops a purge of workflows (counted
    and shown by dagq doctor: ``shared.storage.tolerated``)."""
    try:
        start = int(now // CACHE_SCAN_ROTATE_S) % 256
        expired = await storage.cache.expired(now, limit, start=start)
        if not dry_run:
            await asyncio.gather(*(storage.cache.delete(key) for key in expired))
    except Exception as exc:
        TOLERATED.count(Kind.CACHE_EXPIRY, exc)
        return [], f"expired cache entries were not removed: {describe(exc)} (see dagq doctor)"
    return expired, None


async def _purge_rows(storage: Storage, rows: list[IndexRow]) -> list[IndexRow]:
    """Purge each row's workflow; the rows whose workflows were purged (a workflow whose state
    says it is not finished after all is left alone)."""
    slots = asyncio.Semaphore(PURGE_CONCURRENCY)

    async def one(row: IndexRow) -> bool:
        async with slots:
            # The state blob's metadata says its status in one HEAD (no download, no decode);
            # the row gives the creation time the purge marker keeps.
            try:
                status, etag, metadata = await _terminal_etag(storage, row.workflow_id)
            except NotFoundError:
                # A row whose workflow is gone: listed but broken. Remove it.
                await storage.index.delete(row.workflow_id, row.created_at)
                return True
            if status not in TERMINAL:
                return False
            try:
                mark = purge_mark(row.created_at, metadata)
                await finish_purge(storage, row.workflow_id, mark, etag)
            except ConflictError:
                return False  # retried meanwhile: left as it is
            forget_definition(storage, row.workflow_id)
            return True

    done = await asyncio.gather(*(one(row) for row in rows))
    return [row for row, ok in zip(rows, done, strict=True) if ok]
