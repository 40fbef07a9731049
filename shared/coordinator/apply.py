"""The in-memory half of a workflow update: apply events through the engine, then carry out the
dispatches (sending task messages), failing attempts whose message cannot be sent at all.

Nothing here writes the state blob; ``update.py`` flushes what this changed.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from shared import engine
from shared.coordinator.dispatch import Dispatcher, SentKey
from shared.coordinator.envelope import Envelope
from shared.coordinator.lists import cached_list
from shared.coordinator.results import ResultCacheSteps
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.state import RuntimeState
from shared.errors import ApplyError, DispatchBoundError, DispatchError, MessageError
from shared.limits import ERROR_TAIL_CHARS
from shared.messages import Event, TaskCompletedEvent, TaskFailedEvent

log = logging.getLogger("dagq.coordinator")


@dataclass
class Tally:
    """Counters of one workflow update; merged into the pass stats only if the update succeeds."""

    applied: int = 0
    duplicates: int = 0
    dispatched: int = 0
    upstream_blobs: int = 0
    finished: int = 0
    dead: list[tuple[Envelope, str]] = field(default_factory=list)
    deferred: list[Envelope] = field(default_factory=list)
    set_aside: list[Envelope] = field(default_factory=list)
    """Not applied: the workflow's slice of the pass ran out first (left for a later pass)."""
    completed: list[TaskCompletedEvent] = field(default_factory=list)
    """Completions applied (their cached tasks' results are recorded after the flush)."""
    cache_hits: int = 0
    """Dispatches answered from the result cache (completed without running)."""


def apply_events(
    workflow_id: str,
    wf: CompiledWorkflow,
    state: RuntimeState,
    envelopes: list[Envelope],
    tally: Tally,
    now: float,
    deadline: float = math.inf,
    lists: Mapping[str, object] | None = None,
) -> list[Command]:
    """Apply every envelope's event; return the engine's commands. An event the engine rejects
    goes to ``tally.dead``; one ahead of a rerun not applied yet to ``tally.deferred``; those
    still waiting when ``time.monotonic()`` passes ``deadline`` to ``tally.set_aside``.
    ``lists``: the content of list-feeding blob outputs (``shared.coordinator.lists``)."""
    commands: list[Command] = []

    def apply(env: Envelope, event: Event) -> None:
        before = fingerprint(wf, state, event)
        try:
            out = engine.apply(wf, state, event, now, lists=lists)
        except MessageError as exc:
            tally.dead.append((env, str(exc)))
            return
        except Exception as exc:
            log.exception("workflow %s: applying %s failed", workflow_id, env.message_id)
            raise ApplyError(repr(exc), env) from exc
        tally.applied += 1
        if not out and fingerprint(wf, state, event) == before:
            tally.duplicates += 1
        elif isinstance(event, TaskCompletedEvent):
            tally.completed.append(event)
        commands.extend(out)

    # Premature events get a second chance: their rerun may come later in this very batch.
    for batch in (envelopes, _take_deferred(tally)):
        for env in batch:
            assert env.event is not None
            if time.monotonic() > deadline:
                tally.set_aside.append(env)
            elif engine.premature(wf, state, env.event):
                tally.deferred.append(env)
            else:
                apply(env, env.event)
    return commands


def _take_deferred(tally: Tally) -> list[Envelope]:
    early, tally.deferred = tally.deferred, []
    return early


def dispatch_rounds(wf: CompiledWorkflow) -> int:
    """How many send rounds ``dispatch_all`` may need: every round but the last fails at least one
    attempt whose message cannot be sent or completes one from the result cache, and one run of
    the workflow has at most sum(num_retries + 1) attempts."""
    return sum(task.num_retries + 1 for task in wf.tasks) + 1


async def dispatch_all(
    dispatcher: Dispatcher,
    may_send: Callable[[], bool],
    workflow_id: str,
    wf: CompiledWorkflow,
    state: RuntimeState,
    commands: list[Command],
    tally: Tally,
    sent: set[SentKey],
    now: float,
    max_rounds: int | None = None,
    results: ResultCacheSteps | None = None,
) -> None:
    """Send the dispatches among ``commands``. An attempt whose message cannot be sent at all
    fails (reason ``error``), which may dispatch its retry: rounds go on until no dispatch is
    left, at most ``max_rounds`` (default ``dispatch_rounds(wf)``) — if that is ever reached,
    DispatchBoundError (never a silently dropped dispatch). With ``results``, a dispatch of a
    cached task whose result is in the cache completes from it instead of being sent (its
    children's dispatches follow in the next round)."""
    rounds = dispatch_rounds(engine.expanded(wf, state)) if max_rounds is None else max_rounds
    for _ in range(rounds):
        dispatches = [c for c in commands if isinstance(c, Dispatch)]
        tally.finished += sum(isinstance(c, WorkflowFinished) for c in commands)
        if not dispatches:
            return
        if not may_send():
            raise DispatchError(f"sending the task messages of workflow {workflow_id} failed")
        # The workflow as it runs: the definition plus its foreach_from expansions.
        running = engine.expanded(wf, state)
        hits = await results.lookup_all(workflow_id, running, dispatches, now) if results else []
        answered = {id(hit.dispatch) for hit in hits}
        dispatches = [d for d in dispatches if id(d) not in answered]
        outcome = await dispatcher.send_all(workflow_id, running, dispatches, sent)
        tally.dispatched += outcome.sent
        tally.upstream_blobs += outcome.upstream_blobs
        if not outcome.ok:
            raise DispatchError(f"sending the task messages of workflow {workflow_id} failed")
        commands = []
        for hit in hits:
            lists = cached_list(wf, hit.completion, hit.payload)
            commands += engine.complete_from_cache(
                wf, state, hit.completion, hit.origin, now, lists=lists
            )
        tally.cache_hits += len(hits)
        for command, reason in outcome.unsendable:
            failure = TaskFailedEvent(
                workflow_id=workflow_id,
                task=command.name,
                attempt=command.attempt,
                incarnation=command.incarnation,
                finished_at=now,
                reason="error",
                error=reason[:ERROR_TAIL_CHARS],
            )
            commands += engine.apply(wf, state, failure, now)
    if any(isinstance(c, Dispatch) for c in commands):
        raise DispatchBoundError(
            f"dispatches of workflow {workflow_id} did not settle in {rounds} rounds"
        )


def defer(tally: Tally, max_deliveries: int) -> list[Envelope]:
    """The premature events to leave on the queue; those that have waited ``max_deliveries``
    deliveries for their rerun go to ``tally.dead`` instead (never dropped silently)."""
    waiting = []
    for env in tally.deferred:
        if env.dequeue_count >= max_deliveries:
            reason = (
                "event for an attempt ahead of a finished task: the rerun it belongs to never"
                f" arrived in {env.dequeue_count} deliveries"
            )
            tally.dead.append((env, reason))
        else:
            env.deferred = True
            waiting.append(env)
    return waiting


def fingerprint(wf: CompiledWorkflow, state: RuntimeState, event: Event) -> tuple[object, ...]:
    """A cheap summary that changes whenever an event changes something (to count no-ops): an
    effective task event always changes its task's state or attempt; a control event changes the
    workflow's status, run or per-state counts."""
    task = getattr(event, "task", None)
    if isinstance(task, str) and task in wf.index:
        view = state.task(wf.index[task])
        return (state.status, view.state, view.attempt, view.started_at)
    return (state.status, state.run, tuple(state.counts().items()))
