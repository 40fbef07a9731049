"""The workflow update: everything a pass does to one workflow, with the events it got.

Load the definition (cached per process) and the state (cached with its ETag, or read); apply the
events in memory and dispatch the tasks that became ready (``apply.py``); write the state once
with If-Match (``cas.py``, which re-reads and re-applies on 412); project the index row. Only
the envelopes an update returns as done may be acknowledged; everything else stays queued.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from shared import codec, engine
from shared.coordinator import notices
from shared.coordinator.acks import Acknowledger
from shared.coordinator.apply import apply_events, defer
from shared.coordinator.backlog import event_backlog_s
from shared.coordinator.cas import read_modify_write
from shared.coordinator.dispatch import Dispatcher, DispatchStep, SentKey, dispatch_all
from shared.coordinator.envelope import Envelope
from shared.coordinator.leadership import Leadership
from shared.coordinator.lists import read_lists
from shared.coordinator.notices import Notifier
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.outputs import bound_inline_outputs
from shared.coordinator.projector import Projector
from shared.coordinator.results import ResultCacheSteps
from shared.coordinator.state_cache import CachedState, WorkflowCache
from shared.coordinator.stats import PassStats
from shared.coordinator.tally import Tally
from shared.coordinator.terminal_rows import TerminalRows
from shared.definition.workflow import CompiledWorkflow
from shared.deployment import partition_from_metadata, partition_metadata
from shared.engine.projection import index_row
from shared.engine.state import RuntimeState
from shared.errors import (
    ApplyError,
    CodecError,
    DispatchBoundError,
    DispatchError,
    LeaseError,
    NotFoundError,
    WrongPartitionError,
)
from shared.messages import ActivateEvent, CancelEvent, RetryEvent
from shared.readback.workflow_reads import forget_definition, state_definition
from shared.storage.ports import IndexRow, Storage, StoredState

log = logging.getLogger("dagq.coordinator")


@dataclass
class UpdateResult:
    """What one workflow update handled."""

    done: list[Envelope] = field(default_factory=list)
    """Envelopes fully handled (applied and flushed, orphaned, or dead-lettered): ack them."""
    row: IndexRow | None = None
    """The workflow's current index projection, when the update had its state."""


@dataclass
class _Flushed:
    cached: CachedState
    changed: bool
    tally: Tally


@dataclass
class _Pass:
    """One workflow's update within a pass, what each of its steps (apply and dispatch, flush,
    settle) reads and counts into: the workflow's events, the pass's counters (all its updates
    share them) and what it already sent (a message goes out once per pass), whether the engine's
    sweep runs after the events, and when the update's slice ends (``time.monotonic``)."""

    workflow_id: str
    envelopes: list[Envelope]
    stats: PassStats
    sent: set[SentKey]
    sweep: bool
    deadline: float


class WorkflowUpdater:
    """Runs workflow updates for one coordinator (the parts every update shares)."""

    def __init__(
        self,
        storage: Storage,
        options: CoordinatorOptions,
        cache: WorkflowCache,
        dispatcher: Dispatcher,
        leadership: Leadership,
        projector: Projector,
        acks: Acknowledger,
        clock: Callable[[], float],
        notifier: Notifier | None = None,
    ) -> None:
        self.storage = storage
        self.notifier = notifier
        """Where notifications go (issue 29, ``notices.py``); None: nobody is told."""
        self.options = options
        self.cache = cache
        self.leadership = leadership
        self.projector = projector
        self.acks = acks
        self.clock = clock
        self._dispatcher = dispatcher
        self.results = ResultCacheSteps(storage, concurrency=options.send_concurrency)
        self.empty_queues: frozenset[str] = frozenset()
        """Queues seen holding no message at the start of the current sweep (lost dispatches)."""
        self.terminal_rows = TerminalRows()
        """Where index-repair of terminal rows goes on at the next sweep."""
        self.event_backlog_s = 0.0
        """How long the oldest visible event has waited, at the start of the current sweep."""

    async def note_empty_queues(self, queues: Iterable[str]) -> None:
        """Count these queues now: the sweep's updates re-send queued attempts on empty ones
        (after the grace plus the event queue's backlog, ``shared.coordinator.backlog``)."""
        self.empty_queues = await self._dispatcher.empty_queues(queues)
        backlog = await event_backlog_s(self.storage, self.clock) if self.empty_queues else 0.0
        self.event_backlog_s = backlog

    async def update_all(
        self, groups: dict[str, list[Envelope]], stats: PassStats, sent: set[SentKey]
    ) -> list[Envelope]:
        """Update every workflow of ``groups`` (a bounded number at once); return what is done."""
        slots = asyncio.Semaphore(self.options.workflow_concurrency)

        async def one(workflow_id: str, group: list[Envelope]) -> UpdateResult:
            async with slots:
                return await self.update(workflow_id, group, stats, sent)

        results = await asyncio.gather(*(one(wid, group) for wid, group in groups.items()))
        return [env for result in results for env in result.done]

    async def update(
        self,
        workflow_id: str,
        envelopes: list[Envelope],
        stats: PassStats,
        sent: set[SentKey],
        *,
        sweep: bool = False,
        created_at: float | None = None,
    ) -> UpdateResult:
        """Apply ``envelopes`` (and with ``sweep`` the engine's sweep) to one workflow, dispatch,
        flush once, project. ``created_at``: the creation time the index row gives (a sweep).
        Never raises: a failure leaves the events unacknowledged, except that an event whose own
        application keeps failing is dead-lettered (``acks.failed``)."""
        try:
            return await self._update(workflow_id, envelopes, stats, sent, sweep, created_at)
        except ApplyError as exc:
            self.cache.forget(workflow_id)
            if len(envelopes) > 1:  # find the culprit: the others must not be held back
                return await self._one_by_one(workflow_id, envelopes, stats, sent)
            return UpdateResult(done=await self.acks.failed(workflow_id, envelopes, exc, stats))
        # Storage trouble, a lost lease, flush conflicts: the events are left for redelivery.
        except DispatchError:
            self._left_for_redelivery(workflow_id, envelopes, stats)
            stats.send_failures += 1
        except DispatchBoundError as exc:
            self._left_for_redelivery(workflow_id, envelopes, stats)
            stats.dispatch_rounds_exhausted += 1
            log.error("workflow %s: %s; events left for redelivery", workflow_id, exc)
        except LeaseError:
            self._left_for_redelivery(workflow_id, envelopes, stats)
        except Exception as exc:
            self._left_for_redelivery(workflow_id, envelopes, stats)
            log.warning(
                "workflow %s: update failed, events left for redelivery: %r", workflow_id, exc
            )
        return UpdateResult()

    def _left_for_redelivery(
        self, workflow_id: str, envelopes: list[Envelope], stats: PassStats
    ) -> None:
        self.cache.forget(workflow_id)
        stats.events_unacked += len(envelopes)

    async def _one_by_one(
        self, workflow_id: str, envelopes: list[Envelope], stats: PassStats, sent: set[SentKey]
    ) -> UpdateResult:
        """Update the workflow with one event at a time, so a failure is the event's own."""
        result = UpdateResult()
        for env in envelopes:
            one = await self.update(workflow_id, [env], stats, sent)
            result.done += one.done
            result.row = one.row or result.row
        return result

    async def _update(
        self,
        workflow_id: str,
        envelopes: list[Envelope],
        stats: PassStats,
        sent: set[SentKey],
        sweep: bool,
        created_at: float | None = None,
    ) -> UpdateResult:
        deadline = time.monotonic() + self.options.workflow_slice_s
        p = _Pass(workflow_id, envelopes, stats, sent, sweep, deadline)
        self._drop_other_incarnation(workflow_id, envelopes, created_at)
        try:
            wf, cached = await asyncio.wait_for(
                self._load(workflow_id), timeout=self.options.workflow_slice_s
            )
        except TimeoutError:
            self.cache.forget(workflow_id)
            self.acks.set_aside(workflow_id, envelopes, stats, "loading it")
            return UpdateResult()
        except NotFoundError:
            return UpdateResult(done=self.acks.orphans(workflow_id, envelopes, stats))
        except CodecError as exc:
            reason = f"workflow {workflow_id}: stored definition or state cannot be decoded: {exc}"
            return await self._dead_letter_all(envelopes, reason, stats)
        except WrongPartitionError as exc:
            return await self._dead_letter_all(envelopes, str(exc), stats)
        await bound_inline_outputs(
            self.storage.outputs, cached.state, envelopes,
            inline_limit=self.options.inline_output_bytes,
            state_limit=self.options.state_inline_bytes,
            stats=stats,
        )  # fmt: skip
        try:
            flushed = await self._flush(p, wf, cached)
        except NotFoundError:  # the workflow was deleted under us
            return UpdateResult(done=self.acks.orphans(workflow_id, envelopes, stats))
        self.cache.put_state(workflow_id, flushed.cached)
        return await self._settle(p, wf, flushed)

    async def _flush(self, p: _Pass, wf: CompiledWorkflow, cached: CachedState) -> _Flushed:
        """Apply, dispatch and write the state (re-applying on conflicts)."""
        workflow_id, envelopes = p.workflow_id, p.envelopes
        tallies: list[Tally] = []

        notifier, eventgrid = self.notifier, self.options.eventgrid_endpoint is not None

        async def change(state: RuntimeState) -> None:
            if not self.leadership.ok():
                raise LeaseError("the coordinator lease is no longer safe to write under")
            now = self.clock()
            before = notices.watch(wf, state, eventgrid) if notifier is not None else None
            tallies.append(Tally())  # a conflict re-applies from a fresh read: count afresh
            lists = await read_lists(self.storage.outputs, workflow_id, wf, envelopes)
            try:
                commands = apply_events(
                    workflow_id, wf, state, envelopes, tallies[-1], now, p.deadline, lists
                )
                if p.sweep:
                    commands += engine.sweep(
                        wf, state, now,
                        lost_dispatch_after_s=self.options.lost_dispatch_after_s,
                        cancel_grace_s=self.options.cancel_grace_s,
                        empty_queues=self.empty_queues,
                        empty_queue_grace_s=self.options.empty_queue_repair_after_s
                        + self.event_backlog_s,
                    )  # fmt: skip
            except ApplyError:
                raise
            except Exception as exc:
                raise ApplyError(f"the engine's sweep raised {exc!r}", None) from exc
            # Dispatch before the flush: a crash in between re-sends on redelivery (workers
            # dedupe by attempt claim); flushing first could lose a dispatch forever.
            step = DispatchStep(workflow_id, wf, state, tallies[-1], p.sent, now, self.results)
            await dispatch_all(self._dispatcher, self.leadership.ok, step, commands)
            if before is not None and notifier is not None:  # before the flush, as dispatches
                await notifier.send(notices.notices(wf, state, before, now, eventgrid))

        async def write(state: RuntimeState, data: bytes, etag: str) -> str:
            if not self.leadership.ok():
                raise LeaseError("the coordinator lease is no longer safe to write under")
            meta = codec.state_metadata(state) | partition_metadata(self.storage.partition)
            return await self.storage.workflows.write_state(workflow_id, data, etag, meta)

        def conflict() -> None:
            p.stats.flush_conflicts += 1
            self.cache.forget(workflow_id)

        stored, changed = await read_modify_write(
            cached,
            change=change,
            encode=_encode,
            write=write,
            reread=lambda: self._state(workflow_id, wf),
            attempts=self.options.max_flush_attempts,
            on_conflict=conflict,
        )
        p.stats.flushes += changed
        return _Flushed(stored, changed, tallies[-1])

    async def _settle(self, p: _Pass, wf: CompiledWorkflow, flushed: _Flushed) -> UpdateResult:
        """After a good flush: count, project, dead-letter what the engine rejected."""
        envelopes, stats = p.envelopes, p.stats
        tally = flushed.tally
        waiting = defer(tally, self.options.max_defer_deliveries)
        stats.deferred += len(waiting)
        stats.events_applied += tally.applied
        stats.duplicates += tally.duplicates
        stats.tasks_dispatched += tally.dispatched
        stats.upstream_blobs += tally.upstream_blobs
        stats.workflows_finished += tally.finished
        stats.cache_hits += tally.cache_hits
        stats.other_inputs += tally.other_inputs
        state = flushed.cached.state
        if flushed.changed and tally.completed:  # after the flush: only results that stand
            running = engine.expanded(wf, state)
            stats.cache_records += await self.results.record_all(
                state.workflow_id, running, state, tally.completed, self.clock()
            )
        row = replace(index_row(wf, state), partition=self.storage.partition)
        # An unchanged state has nothing new to project (index-repair mends an active row), but
        # a control event may find its own write already made by a flush whose reply was lost:
        # that flush projected nothing, and a row it left terminal is swept by nobody (seed 1266).
        if flushed.changed or any(_is_control(env) for env in envelopes):
            await self.projector.project(row, stats, urgent=tally.finished > 0)
        if tally.set_aside:
            self.acks.set_aside(p.workflow_id, tally.set_aside, stats, "applying its events")
        held = {id(env) for env, _ in tally.dead} | {id(env) for env in waiting + tally.set_aside}
        done = [env for env in envelopes if id(env) not in held]
        done += await self.acks.dead_letter(tally.dead, stats)
        return UpdateResult(done=done, row=row)

    async def _dead_letter_all(
        self, envelopes: list[Envelope], reason: str, stats: PassStats
    ) -> UpdateResult:
        """Dead-letter every event of a workflow that cannot be loaded, for ``reason``."""
        log.error(reason)
        done = await self.acks.dead_letter([(env, reason) for env in envelopes], stats)
        return UpdateResult(done=done)

    def _drop_other_incarnation(
        self, workflow_id: str, envelopes: list[Envelope], created_at: float | None
    ) -> None:
        """Forget what this process cached of ``workflow_id`` when it may be an earlier workflow
        of the same id (purged, then submitted again): on an activation (the first event of
        every workflow), when the index row's creation time is not the cached state's, or when an
        event names another incarnation (the state read afresh decides whether it is stale)."""
        cached = self.cache.peek(workflow_id)
        activating = any(
            env.event is not None and env.event.kind == "activate" for env in envelopes
        )
        other = cached is not None and (
            (created_at is not None and cached.state.created_at != created_at)
            or any(_names_other(env, cached.state.incarnation) for env in envelopes)
        )
        if activating or other:
            self.cache.forget(workflow_id)
            forget_definition(self.storage, workflow_id)

    async def _load(self, workflow_id: str) -> tuple[CompiledWorkflow, CachedState]:
        cached = self.cache.take_state(workflow_id)
        if cached is not None:
            wf = await state_definition(self.storage, workflow_id, cached.data)
            return wf, cached
        # A state carries a small definition (version 9, issue 32): read it first, and the
        # definition blob only when the state does not carry it and this process has not cached
        # it (a large definition, or a state written before: one more round trip, once).
        stored = await self.storage.workflows.read_state(workflow_id)
        wf = await state_definition(self.storage, workflow_id, stored.data)
        return wf, self._decoded(workflow_id, wf, stored)

    async def _state(self, workflow_id: str, wf: CompiledWorkflow) -> CachedState:
        cached = self.cache.take_state(workflow_id)
        if cached is None:
            stored = await self.storage.workflows.read_state(workflow_id)
            cached = self._decoded(workflow_id, wf, stored)
        return cached

    def _decoded(self, workflow_id: str, wf: CompiledWorkflow, stored: StoredState) -> CachedState:
        # The partition never changes after submit, so checking it on each read from storage
        # (from the metadata the download returns: no request of its own) covers every state
        # this coordinator caches.
        owner = partition_from_metadata(stored.metadata)
        if owner != self.storage.partition:
            raise WrongPartitionError(workflow_id, owner, self.storage.partition)
        return CachedState(codec.decode_state(stored.data, wf), stored.etag, stored.data)


def _names_other(env: Envelope, incarnation: int | None) -> bool:
    """Whether ``env``'s event names an incarnation other than ``incarnation``."""
    theirs = getattr(env.event, "incarnation", None)
    return theirs is not None and theirs != incarnation


def _encode(state: RuntimeState) -> bytes:
    """The state blob's bytes; a failure here is the events' doing (the state came from them)."""
    try:
        return codec.encode_state(state)
    except Exception as exc:
        raise ApplyError(f"encoding the state raised {exc!r}", None) from exc


def _is_control(envelope: Envelope) -> bool:
    """An API's event (activate, cancel, retry): rare, and it may change the workflow's status."""
    return isinstance(envelope.event, ActivateEvent | CancelEvent | RetryEvent)
