"""Intake: receive event messages, decode them, group them by workflow, hand each group to its
workflow update. A malformed event (not JSON, wrong shape, a field out of bounds, an unsafe id, a
forged blob name: ``shared.messages.decode_event``) is dead-lettered with its reason right here
and never reaches a workflow."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from shared.coordinator.dispatch import SentKey
from shared.coordinator.envelope import Envelope
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.stats import PassStats
from shared.coordinator.update import WorkflowUpdater
from shared.errors import MessageError
from shared.messages import SignedMessage, decode_event
from shared.signing import Verifier, verifier_of
from shared.storage.ports import Queue

log = logging.getLogger("dagq.coordinator")


class Receiver:
    """Receives from queues in cycles: a deep queue earns more concurrent receives per cycle
    (up to ``receives_per_cycle``), a shallow one just one."""

    def __init__(self, options: CoordinatorOptions) -> None:
        self._options = options
        self._fanout: dict[str, int] = {}

    async def receive(self, queue: Queue, stats: PassStats) -> list[Envelope]:
        """One receive cycle on ``queue`` (failed receives are logged; their events come back)."""
        opts = self._options
        fanout = self._fanout.get(queue.name, 1)
        batches = await asyncio.gather(
            *(queue.receive(opts.batch_size, opts.event_visibility_s) for _ in range(fanout)),
            return_exceptions=True,
        )
        stats.receives += len(batches)
        full = all(not isinstance(b, BaseException) and len(b) >= opts.batch_size for b in batches)
        self._fanout[queue.name] = min(fanout * 2, opts.receives_per_cycle) if full else 1
        envelopes: list[Envelope] = []
        for batch in batches:
            if isinstance(batch, BaseException):
                log.warning("receive from %s failed: %r", queue.name, batch)
                continue
            stats.messages_received += len(batch)
            for message in batch:
                envelopes += Envelope.received(message, queue)
        stats.events_received += len(envelopes)
        return envelopes


def sort_out(
    envelopes: Sequence[Envelope], verifier: Verifier | None = None
) -> tuple[dict[str, list[Envelope]], list[tuple[Envelope, str]]]:
    """Decode every envelope (a control event must be signed by the app when ``verifier`` is
    given: ``shared.signing``) and group them by workflow; return the groups and the envelopes
    to dead-letter with their reasons."""
    groups: dict[str, list[Envelope]] = {}
    dead: list[tuple[Envelope, str]] = []
    for env in envelopes:
        if env.malformed is not None:
            dead.append((env, env.malformed))
            continue
        if env.event is None:
            try:
                event = decode_event(env.text)
                if verifier is not None and isinstance(event, SignedMessage):
                    verifier.check(event)
            except MessageError as exc:
                dead.append((env, str(exc)))
                continue
            env.event = event
        groups.setdefault(env.event.workflow_id, []).append(env)
    return groups, dead


async def take_in(
    envelopes: Sequence[Envelope], updater: WorkflowUpdater, stats: PassStats, sent: set[SentKey]
) -> list[Envelope]:
    """Decode, group and update each workflow; return the envelopes that may be acknowledged."""
    opts = updater.options
    groups, dead = sort_out(envelopes, verifier_of(opts.verify_keys, opts.signing_key))
    done = await updater.acks.dead_letter(dead, stats)
    return done + await updater.update_all(groups, stats, sent)
