"""The in-memory half of a workflow update: apply events through the engine (the dispatches that
follow are ``dispatch.dispatch_all``'s).

Nothing here writes the state blob; ``update.py`` flushes what this changed.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping

from shared import engine
from shared.coordinator.envelope import Envelope
from shared.coordinator.tally import Tally
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Command, OtherInputs
from shared.engine.state import RuntimeState
from shared.errors import ApplyError, MessageError
from shared.messages import Event, TaskCompletedEvent

log = logging.getLogger("dagq.coordinator")


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
        other_inputs = sum(isinstance(c, OtherInputs) for c in out)
        tally.other_inputs += other_inputs
        if not out and fingerprint(wf, state, event) == before:
            tally.duplicates += 1
        elif isinstance(event, TaskCompletedEvent) and not other_inputs:
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
