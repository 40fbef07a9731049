"""The coordinator: drain events, apply them through the engine, dispatch, flush, project, ack.

One pass (``run_once``) is DESIGN.md's loop: take the lease; receive events in cycles of a few
concurrent ``receive(32)`` calls; decode (malformed -> dead letter); group by workflow; for each
workflow load definition and state (cached, with the ETag), apply every event in memory, send the
task messages of newly ready tasks concurrently, then flush the state ONCE with If-Match and
project its index row; only then delete the cycle's events. The deletes of one cycle overlap the
receive and apply of the next (they are already safe to delete). A crash anywhere leaves events
on the queue, and re-applying them is idempotent.

The same per-workflow step serves the sweeps (with synthetic events and ``engine.sweep``) and the
Functions queue trigger (one event handed over by the host, applied with a drain).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared import codec, engine
from shared.commands import Dispatch, WorkflowFinished
from shared.coordinator.cache import CachedState, WorkflowCache
from shared.coordinator.dispatch import Dispatcher, SentKey
from shared.coordinator.leadership import Leadership
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.projector import Projector
from shared.coordinator.stats import LeaseState, PassStats
from shared.errors import CodecError, LeaseError, MessageError, NotFoundError, StaleStateError
from shared.messages import ERROR_TAIL_CHARS, Event, TaskFailedEvent, decode_event
from shared.names import ResourceNames, workflow_id_problem
from shared.projection import index_row
from shared.settings import Settings
from shared.state import RuntimeState
from shared.storage.ports import IndexRow, Queue, ReceivedMessage, Storage
from shared.workflow import CompiledWorkflow

log = logging.getLogger("dagq.coordinator")

Clock = Callable[[], float]


@dataclass
class Envelope:
    """One event on its way through a pass, with where it came from (to acknowledge it)."""

    text: str
    message_id: str
    dequeue_count: int
    message: ReceivedMessage | None = None
    """None for the Functions trigger message (the host deletes it) and for sweep events."""
    source: Queue | None = None
    event: Event | None = None
    deferred: bool = False
    """Left unacknowledged because it reports an attempt of a rerun the state has not applied
    yet (``engine.premature``): it comes back after its visibility timeout."""


@dataclass
class PassResult:
    """What a pass did; ``stats`` is also logged as the pass's one structured record."""

    stats: PassStats
    trigger_applied: bool | None = None
    """For ``handle_trigger_message``: whether the trigger event was applied (or dead-lettered, or
    found orphaned) — i.e. whether the host may delete it."""
    trigger_requeued: bool = False
    """The trigger event could not be applied here and was re-sent to the event queue."""

    @property
    def leader(self) -> bool:
        return self.stats.lease is not LeaseState.NOT_LEADER


@dataclass
class _Tally:
    """Counters of one workflow's step; merged into the pass stats only if the step succeeds."""

    applied: int = 0
    duplicates: int = 0
    dispatched: int = 0
    upstream_blobs: int = 0
    finished: int = 0
    dead: list[tuple[Envelope, str]] = field(default_factory=list)
    deferred: list[Envelope] = field(default_factory=list)


@dataclass
class _StepResult:
    done: list[Envelope] = field(default_factory=list)
    """Envelopes fully handled (applied and flushed, orphaned, or dead-lettered): ack them."""
    row: IndexRow | None = None
    """The workflow's current index projection, when the step had its state."""


class Coordinator:
    """The coordinator of one deployment (one prefix). Not shared between event loops.

    ``hold_lease``: keep the lease between passes (the long-lived process) instead of releasing
    it at the end of each pass (Functions invocations, so other instances can take over).
    """

    def __init__(
        self,
        storage: Storage,
        config: Settings | ResourceNames,
        options: CoordinatorOptions | None = None,
        *,
        clock: Clock = time.time,
        hold_lease: bool = False,
    ) -> None:
        """``config``: the deployment's Settings (options then default from them) or just its
        ResourceNames (options default to CoordinatorOptions())."""
        self.storage = storage
        if isinstance(config, Settings):
            self.names = config.names
            self.options = options or CoordinatorOptions.from_settings(config)
        else:
            self.names = config
            self.options = options or CoordinatorOptions()
        self.clock = clock
        self.hold_lease = hold_lease
        self.cache = WorkflowCache()
        self._dispatcher = Dispatcher(storage, self.names, self.options.send_concurrency)
        self._lock = asyncio.Lock()
        self.leadership = Leadership(storage.lease, self.options, on_lost=self.cache.clear)
        self.projector = Projector(storage.index, self.options.project_every_s)
        self._fanout: dict[str, int] = {}
        self._delete_slots = asyncio.Semaphore(self.options.delete_concurrency)

    # -- entry points ------------------------------------------------------------------------

    async def run_once(self, budget_s: float | None = None, *, sweep: bool = False) -> PassResult:
        """One pass: drain the event queue until it is empty or ``budget_s`` is used, then (with
        ``sweep``) run the sweeps. Returns without touching anything if another coordinator holds
        the lease (``result.leader`` is False); never raises for a bad event."""
        return await self._pass(budget_s, sweep=sweep, trigger=None)

    async def run_sweeps(self, budget_s: float | None = None) -> PassResult:
        """The timer trigger's entry: a drain (backstop for the queue trigger) plus every sweep."""
        return await self._pass(budget_s, sweep=True, trigger=None)

    async def handle_trigger_message(
        self, text: str, message_id: str, dequeue_count: int = 1, budget_s: float | None = None
    ) -> PassResult:
        """The Functions queue trigger's entry: apply the event the host handed over together with
        a drain of whatever else is queued.

        The host deletes the trigger message when this returns, so on return it has either been
        applied and flushed (or dead-lettered, or acknowledged as an orphan), or re-sent to the
        event queue when this instance could not apply it (another instance holds the lease, the
        lease was lost, a send or flush failed) — never lost and never pushed toward the poison
        queue for that. Only if even the re-send fails does this raise, so the host retries.
        """
        trigger = Envelope(text=text, message_id=message_id, dequeue_count=dequeue_count)
        try:
            result = await self._pass(budget_s, sweep=False, trigger=trigger)
        except Exception as exc:  # e.g. the lease blob unreachable: hand the event back
            log.warning("pass for trigger message %s failed: %r", message_id, exc)
            result = PassResult(PassStats(lease=LeaseState.LOST), trigger_applied=False)
        if not result.trigger_applied:
            # A premature event waits for its rerun's retry event, which may be invisible for up
            # to a visibility timeout; anything else is retried soon.
            delay = self.options.event_visibility_s if trigger.deferred else None
            await self.storage.event_queue.send(text, delay_s=delay or self.options.requeue_delay_s)
            result.trigger_requeued = True
        return result

    async def run_forever(
        self,
        stop: asyncio.Event,
        *,
        wait_for_lease: bool = False,
        sweep_every_s: float = 5.0,
        idle_min_s: float = 0.02,
        idle_max_s: float = 0.5,
    ) -> None:
        """The long-lived mode: pass after pass until ``stop`` is set, sweeping every
        ``sweep_every_s`` and polling an idle queue with a growing pause (up to ``idle_max_s``).

        Raises LeaseError if another coordinator holds the lease (at start or after a loss),
        unless ``wait_for_lease``, in which case it waits for the lease to become free.
        """
        self.hold_lease = True
        next_sweep = 0.0
        idle = idle_min_s
        try:
            while not stop.is_set():
                sweep = time.monotonic() >= next_sweep
                try:
                    result = await self._pass(None, sweep=sweep, trigger=None)
                except Exception:  # transient storage trouble: keep the process alive
                    log.exception("coordinator pass failed; retrying shortly")
                    await _sleep_until(stop, idle_max_s)
                    continue
                if result.stats.lease is not LeaseState.HELD:
                    if not wait_for_lease and result.stats.lease is LeaseState.NOT_LEADER:
                        raise LeaseError(
                            f"another coordinator holds the lease of prefix {self.names.prefix!r}"
                            f" (blob {self.names.workflows_container}/{self.names.lease_blob()}):"
                            " stop it first, or start this one with --wait-for-lease"
                        )
                    await _sleep_until(stop, self.options.renew_interval_s)
                    continue
                if sweep:
                    next_sweep = time.monotonic() + sweep_every_s
                if result.stats.events_received:
                    idle = idle_min_s
                else:
                    await _sleep_until(stop, idle)
                    idle = min(idle * 2, idle_max_s)
        finally:
            await self.release_lease()

    async def release_lease(self) -> None:
        """Give the lease up (no error if it was lost)."""
        await self.leadership.release()

    # -- the pass ----------------------------------------------------------------------------

    async def _pass(
        self, budget_s: float | None, *, sweep: bool, trigger: Envelope | None
    ) -> PassResult:
        async with self._lock:
            started = time.monotonic()
            stats = PassStats()
            result = PassResult(stats)
            if not await self.leadership.take():
                stats.lease = LeaseState.NOT_LEADER
                result.trigger_applied = False if trigger else None
                stats.latency_s = time.monotonic() - started
                log.debug("not the leader: %s", stats.record())
                return result
            renewer = asyncio.create_task(self.leadership.renew_while_working())
            try:
                # Events received late in the pass must still be flushed and deleted before
                # their visibility runs out, or they are redelivered while we hold them.
                budget = min(
                    budget_s or self.options.pass_budget_s, self.options.event_visibility_s / 2
                )
                await self._drain(started + budget, stats, result, trigger)
                if sweep and self.leadership.ok():
                    await self._sweeps(stats)
                if self.leadership.ok():
                    await self.projector.flush(stats)
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
                if not self.leadership.ok():
                    stats.lease = LeaseState.LOST
                    self.cache.clear()
                    self.leadership.drop()
                elif not self.hold_lease:
                    await self.release_lease()
            stats.latency_s = time.monotonic() - started
            if stats.events_received or stats.sweep or stats.lease is not LeaseState.HELD:
                stats.log()
            else:
                log.debug("idle pass: %s", stats.record())
            return result

    async def _drain(
        self, deadline: float, stats: PassStats, result: PassResult, trigger: Envelope | None
    ) -> None:
        """Receive -> process -> ack, pipelined: the next receive is in flight while a cycle is
        applied and flushed, and deletes of flushed cycles run in the background (one shared
        bound), so the queue is never idle waiting for us."""
        sent: set[SentKey] = set()
        acks: list[asyncio.Task[None]] = []
        self._delete_slots = asyncio.Semaphore(self.options.delete_concurrency)
        queue = self.storage.event_queue
        first = [trigger] if trigger else []
        if trigger is not None:
            stats.events_received += 1
        receiving: asyncio.Task[list[Envelope]] | None = asyncio.create_task(
            self._receive(queue, stats)
        )
        try:
            while receiving is not None:
                envelopes = first + await receiving
                first = []
                receiving = None
                if not envelopes or not self.leadership.ok():
                    break
                if time.monotonic() < deadline:
                    receiving = asyncio.create_task(self._receive(queue, stats))
                done = await self._process(envelopes, stats, sent)
                if trigger is not None and result.trigger_applied is None:
                    result.trigger_applied = any(env is trigger for env in done)
                acks.append(asyncio.create_task(self._ack(done, stats)))
        finally:
            if receiving is not None:  # only after a failure: the events come back on their own
                with contextlib.suppress(Exception):
                    await receiving
            await asyncio.gather(*acks, return_exceptions=True)
            if trigger is not None and result.trigger_applied is None:
                result.trigger_applied = False

    async def _receive(self, queue: Queue, stats: PassStats) -> list[Envelope]:
        opts = self.options
        fanout = self._fanout.get(queue.name, 1)
        batches = await asyncio.gather(
            *(queue.receive(opts.batch_size, opts.event_visibility_s) for _ in range(fanout)),
            return_exceptions=True,
        )
        stats.receives += len(batches)
        envelopes: list[Envelope] = []
        # A deep queue earns more concurrent receives per cycle; a shallow one just one.
        full = all(not isinstance(b, BaseException) and len(b) >= opts.batch_size for b in batches)
        self._fanout[queue.name] = min(fanout * 2, opts.receives_per_cycle) if full else 1
        for batch in batches:
            if isinstance(batch, BaseException):
                log.warning("receive from %s failed: %r", queue.name, batch)
                continue
            for message in batch:
                envelopes.append(
                    Envelope(
                        text=message.text,
                        message_id=message.id,
                        dequeue_count=message.dequeue_count,
                        message=message,
                        source=queue,
                    )
                )
        stats.events_received += len(envelopes)
        return envelopes

    async def _process(
        self, envelopes: Sequence[Envelope], stats: PassStats, sent: set[SentKey]
    ) -> list[Envelope]:
        """Decode, group by workflow and run each workflow's step; return what may be acked."""
        done: list[Envelope] = []
        dead: list[tuple[Envelope, str]] = []
        groups: dict[str, list[Envelope]] = {}
        for env in envelopes:
            if env.event is None:
                try:
                    env.event = decode_event(env.text)
                except MessageError as exc:
                    dead.append((env, str(exc)))
                    continue
            problem = workflow_id_problem(env.event.workflow_id)
            if problem:
                dead.append((env, f"event names an {problem}"))
                continue
            groups.setdefault(env.event.workflow_id, []).append(env)
        done += await self._dead_letter(dead, stats)
        slots = asyncio.Semaphore(self.options.workflow_concurrency)

        async def step(workflow_id: str, group: list[Envelope]) -> _StepResult:
            async with slots:
                return await self._step(workflow_id, group, stats, sent, sweep=False)

        results = await asyncio.gather(*(step(wid, group) for wid, group in groups.items()))
        for res in results:
            done += res.done
        return done

    # -- one workflow ------------------------------------------------------------------------

    async def _step(
        self,
        workflow_id: str,
        envelopes: list[Envelope],
        stats: PassStats,
        sent: set[SentKey],
        *,
        sweep: bool,
    ) -> _StepResult:
        """Apply ``envelopes`` (and with ``sweep`` the engine's sweep) to one workflow, dispatch,
        flush once, project. Never raises: a failure leaves the events unacked."""
        try:
            return await self._step_unguarded(workflow_id, envelopes, stats, sent, sweep=sweep)
        except Exception as exc:
            self.cache.forget(workflow_id)
            stats.events_unacked += len(envelopes)
            log.warning(
                "workflow %s: step failed, events left for redelivery: %r", workflow_id, exc
            )
            return _StepResult()

    async def _step_unguarded(
        self,
        workflow_id: str,
        envelopes: list[Envelope],
        stats: PassStats,
        sent: set[SentKey],
        *,
        sweep: bool,
    ) -> _StepResult:
        try:
            wf = await self._definition(workflow_id)
            cached = await self._state(workflow_id, wf)
        except NotFoundError:
            stats.orphans += len(envelopes)
            return _StepResult(done=list(envelopes))
        except CodecError as exc:
            reason = f"workflow {workflow_id}: stored definition or state cannot be decoded: {exc}"
            log.error(reason)
            done = await self._dead_letter([(env, reason) for env in envelopes], stats)
            return _StepResult(done=done)

        excluded: dict[int, str] = {}
        conflicts = 0
        while True:
            if not self.leadership.ok():
                self.cache.forget(workflow_id)
                stats.events_unacked += len(envelopes)
                return _StepResult()
            live = [env for env in envelopes if id(env) not in excluded]
            tally = _Tally()
            try:
                await self._apply_and_dispatch(
                    workflow_id, wf, cached.state, live, tally, sent, sweep
                )
            except _ApplyCrashed as crash:
                # The engine raised something unexpected; the state may be half-mutated.
                self.cache.forget(workflow_id)
                if crash.envelope.dequeue_count >= self.options.max_dequeue_count:
                    excluded[id(crash.envelope)] = f"applying the event failed repeatedly: {crash}"
                    cached = await self._state(workflow_id, wf)
                    continue
                stats.events_unacked += len(envelopes)
                return _StepResult()
            except _SendFailed:
                self.cache.forget(workflow_id)
                stats.send_failures += 1
                stats.events_unacked += len(envelopes)
                return _StepResult()

            data = codec.encode_state(cached.state)
            changed = data != cached.data
            if changed:
                if not self.leadership.ok():
                    continue  # the top of the loop gives up without writing
                try:
                    etag = await self.storage.workflows.write_state(
                        workflow_id, data, cached.etag, codec.state_metadata(cached.state)
                    )
                except StaleStateError:
                    conflicts += 1
                    stats.flush_conflicts += 1
                    self.cache.forget(workflow_id)
                    if conflicts >= self.options.max_flush_attempts:
                        stats.events_unacked += len(envelopes)
                        log.warning(
                            "workflow %s: %d flush conflicts in a row; events left for redelivery",
                            workflow_id, conflicts,
                        )  # fmt: skip
                        return _StepResult()
                    cached = await self._state(workflow_id, wf)
                    continue
                except NotFoundError:  # the workflow was deleted under us
                    stats.orphans += len(envelopes)
                    return _StepResult(done=list(envelopes))
                stats.flushes += 1
                cached = CachedState(cached.state, etag, data)
            self.cache.put_state(workflow_id, cached)
            break

        tally.dead += [(env, excluded[id(env)]) for env in envelopes if id(env) in excluded]
        waiting = self._defer(tally)
        stats.deferred += len(waiting)
        stats.events_applied += tally.applied
        stats.duplicates += tally.duplicates
        stats.tasks_dispatched += tally.dispatched
        stats.upstream_blobs += tally.upstream_blobs
        stats.workflows_finished += tally.finished
        row = index_row(wf, cached.state)
        if changed:  # an unchanged state has nothing new to project (index-repair mends drift)
            await self.projector.project(row, stats, urgent=tally.finished > 0)
        dead_ids = {id(env) for env, _ in tally.dead} | {id(env) for env in waiting}
        done = [env for env in envelopes if id(env) not in dead_ids]
        done += await self._dead_letter(tally.dead, stats)
        return _StepResult(done=done, row=row)

    async def _apply_and_dispatch(
        self,
        workflow_id: str,
        wf: CompiledWorkflow,
        state: RuntimeState,
        envelopes: list[Envelope],
        tally: _Tally,
        sent: set[SentKey],
        sweep: bool,
    ) -> None:
        now = self.clock()
        commands: list[Dispatch | WorkflowFinished] = []

        def apply(env: Envelope) -> None:
            assert env.event is not None
            before = _fingerprint(wf, state, env.event)
            try:
                out = engine.apply(wf, state, env.event, now)
            except MessageError as exc:
                tally.dead.append((env, str(exc)))
                return
            except Exception as exc:
                log.exception("workflow %s: applying %s failed", workflow_id, env.message_id)
                raise _ApplyCrashed(env, repr(exc)) from exc
            tally.applied += 1
            if not out and _fingerprint(wf, state, env.event) == before:
                tally.duplicates += 1
            commands.extend(out)

        for env in envelopes:
            assert env.event is not None
            if engine.premature(wf, state, env.event):
                tally.deferred.append(env)
            else:
                apply(env)
        # The rerun they belong to may have been in this very batch, after them.
        early, tally.deferred = tally.deferred, []
        for env in early:
            assert env.event is not None
            if engine.premature(wf, state, env.event):
                tally.deferred.append(env)
            else:
                apply(env)
        if sweep:
            commands += engine.sweep(
                wf,
                state,
                now,
                lost_dispatch_after_s=self.options.lost_dispatch_after_s,
                cancel_grace_s=self.options.cancel_grace_s,
            )
        # Dispatch before the flush: a crash in between re-sends on redelivery (workers dedupe by
        # attempt claim); flushing first could lose a dispatch forever.
        for _ in range(100):
            dispatches = [c for c in commands if isinstance(c, Dispatch)]
            tally.finished += sum(isinstance(c, WorkflowFinished) for c in commands)
            if not dispatches:
                return
            if not self.leadership.ok():
                raise _SendFailed
            outcome = await self._dispatcher.send_all(workflow_id, wf, dispatches, sent)
            tally.dispatched += outcome.sent
            tally.upstream_blobs += outcome.upstream_blobs
            if not outcome.ok:
                raise _SendFailed
            commands = []
            for command, reason in outcome.unsendable:
                failure = TaskFailedEvent(
                    workflow_id=workflow_id,
                    task=command.name,
                    attempt=command.attempt,
                    finished_at=now,
                    reason="error",
                    error=reason[:ERROR_TAIL_CHARS],
                )
                commands += engine.apply(wf, state, failure, now)

    def _defer(self, tally: _Tally) -> list[Envelope]:
        """The premature events to leave on the queue; those that have waited too many deliveries
        for their rerun go to the dead letters instead (never dropped silently)."""
        waiting = []
        for env in tally.deferred:
            if env.dequeue_count >= self.options.max_defer_deliveries:
                reason = (
                    "event for an attempt ahead of a finished task: the rerun it belongs to never"
                    f" arrived in {env.dequeue_count} deliveries"
                )
                tally.dead.append((env, reason))
            else:
                env.deferred = True
                waiting.append(env)
        return waiting

    async def _definition(self, workflow_id: str) -> CompiledWorkflow:
        wf = self.cache.definitions.get(workflow_id)
        if wf is None:
            wf = codec.decode_definition(await self.storage.workflows.read_definition(workflow_id))
            self.cache.definitions.put(workflow_id, wf)
        return wf

    async def _state(self, workflow_id: str, wf: CompiledWorkflow) -> CachedState:
        cached = self.cache.take_state(workflow_id)
        if cached is None:
            data, etag = await self.storage.workflows.read_state(workflow_id)
            cached = CachedState(codec.decode_state(data, wf), etag, data)
        return cached

    # -- acknowledgements, dead letters, projections ------------------------------------------

    async def _ack(self, envelopes: list[Envelope], stats: PassStats) -> None:
        slots = self._delete_slots

        async def delete(env: Envelope) -> None:
            assert env.message is not None
            assert env.source is not None
            async with slots:
                try:
                    await env.source.delete(env.message)
                except Exception as exc:  # redelivered later; re-applying it is a no-op
                    log.warning("could not delete event %s: %r", env.message_id, exc)

        await asyncio.gather(*(delete(env) for env in envelopes if env.message is not None))

    async def _dead_letter(
        self, items: list[tuple[Envelope, str]], stats: PassStats
    ) -> list[Envelope]:
        """Keep each event aside with its reason; return those stored (safe to delete)."""
        if not items:
            return []
        now = self.clock()

        async def put(env: Envelope, reason: str) -> Envelope | None:
            try:
                await self.storage.deadletters.put(
                    message_id=env.message_id, text=env.text, reason=reason, received_at=now
                )
            except Exception as exc:
                log.warning("could not dead-letter event %s: %r", env.message_id, exc)
                return None
            log.warning("dead-lettered event %s: %s", env.message_id, reason)
            return env

        stored = [env for env in await asyncio.gather(*(put(e, r) for e, r in items)) if env]
        stats.dead_lettered += len(stored)
        return stored

    # -- sweeps ------------------------------------------------------------------------------

    async def _sweeps(self, stats: PassStats) -> None:
        from shared.coordinator.sweeps import run_sweeps

        await run_sweeps(self, stats)

    async def sweep_workflow(
        self, workflow_id: str, events: list[Event], stats: PassStats, sent: set[SentKey]
    ) -> IndexRow | None:
        """Apply sweep-made events (cancel, activate) and the engine's sweep to one workflow;
        return its projection (None if it could not be processed)."""
        envelopes = [
            Envelope(
                text=event.model_dump_json(),
                message_id=f"sweep:{event.kind}",
                dequeue_count=0,
                event=event,
            )
            for event in events
        ]
        result = await self._step(workflow_id, envelopes, stats, sent, sweep=True)
        return result.row

    async def process_envelopes(
        self, envelopes: list[Envelope], stats: PassStats, sent: set[SentKey]
    ) -> list[Envelope]:
        """Process already-received envelopes (poison repair); return those to acknowledge."""
        return await self._process(envelopes, stats, sent)

    async def receive_from(self, queue: Queue, stats: PassStats) -> list[Envelope]:
        return await self._receive(queue, stats)

    async def ack(self, envelopes: list[Envelope], stats: PassStats) -> None:
        await self._ack(envelopes, stats)

    async def write_row(self, row: IndexRow, stats: PassStats) -> None:
        await self.projector.write(row, stats)


class _ApplyCrashed(Exception):
    def __init__(self, envelope: Envelope, detail: str) -> None:
        super().__init__(detail)
        self.envelope = envelope


class _SendFailed(Exception):
    pass


def _fingerprint(wf: CompiledWorkflow, state: RuntimeState, event: Event) -> tuple[object, ...]:
    """A cheap summary that changes whenever an event changes something (to count no-ops): an
    effective task event always changes its task's state or attempt; a control event changes the
    workflow's status, run or per-state counts."""
    task = getattr(event, "task", None)
    if isinstance(task, str) and task in wf.index:
        view = state.task(wf.index[task])
        return (state.status, view.state, view.attempt, view.started_at)
    return (state.status, state.run, tuple(state.counts().items()))


async def _sleep_until(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


__all__ = ["Coordinator", "Envelope", "PassResult"]
