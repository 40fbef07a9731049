"""One structured stats record per coordinator pass (logged as JSON on ``dagq.coordinator``)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from enum import StrEnum

log = logging.getLogger("dagq.coordinator")


class LeaseState(StrEnum):
    """What the pass knew about the coordinator lease."""

    HELD = "held"
    """This coordinator held the lease for the whole pass."""
    NOT_LEADER = "not_leader"
    """Another coordinator holds the lease: the pass touched nothing."""
    LOST = "lost"
    """The lease was lost mid-pass: the pass stopped before its next write."""


@dataclass
class PassStats:
    """Counters of one pass. ``events_*`` count events (a batch's one by one; the trigger
    message's included)."""

    lease: LeaseState = LeaseState.HELD
    partition: int = 0
    messages_received: int = 0
    """Event queue messages received: an event batch is one message of several events."""
    events_received: int = 0
    events_applied: int = 0
    """Events applied and flushed (or found to change nothing), then acknowledged."""
    duplicates: int = 0
    """Events that changed nothing (redeliveries, stale attempts, no-op controls)."""
    events_unacked: int = 0
    """Events left on the queue for redelivery (send failure, flush conflicts, lost lease)."""
    workflows_set_aside: int = 0
    """Workflows whose loading or applying used up their slice of the pass (``workflow_slice_s``):
    their remaining events were left for a later pass (each is logged with the workflow id)."""
    event_failures: int = 0
    """Updates where computing the new state raised (engine or codec): the event is retried alone
    and dead-lettered after ``max_dequeue_count`` deliveries."""
    deferred: int = 0
    """Events for an attempt of a rerun the state has not applied yet, left on the queue for it."""
    orphans: int = 0
    """Events for a workflow without a state blob: acknowledged and counted."""
    dead_lettered: int = 0
    """Malformed or inapplicable events kept aside in the dead-letter container."""
    tasks_dispatched: int = 0
    send_failures: int = 0
    dispatch_rounds_exhausted: int = 0
    """Workflow updates whose dispatching did not settle within its bound (``apply.
    dispatch_rounds``; it cannot happen unless the engine misbehaves): logged as errors, events
    left for redelivery."""
    outputs_spilled: int = 0
    """Inline outputs moved to the outputs container before they entered a state (over the
    inline limit, or over the workflow state's inline total)."""
    upstream_blobs: int = 0
    """Dispatches whose upstream map was written to a blob because it did not fit the message."""
    cache_hits: int = 0
    """Dispatches answered from the result cache (the task completed without running)."""
    cache_records: int = 0
    """Result cache entries written for cached tasks that completed."""
    other_inputs: int = 0
    """Reports not taken because the attempt ran on other inputs than the state recorded for it
    (a re-sent dispatch carried another upstream): the task ran again."""
    flushes: int = 0
    flush_conflicts: int = 0
    """State writes that lost the ETag compare-and-swap (each is re-read and re-applied)."""
    workflows_finished: int = 0
    projections: int = 0
    tolerated: dict[str, int] = field(default_factory=dict)
    """Storage failures the coordinator tolerated (a cache look-up or record, an index
    projection), by kind: counted since the previous pass (``shared.storage.tolerated``)."""
    sweep: dict[str, int] = field(default_factory=dict)
    """Per sweep: workflows it acted on (cancel_poll, activate_repair, engine, poison)."""
    receives: int = 0
    latency_s: float = 0.0
    """Wall time of the pass."""

    def bump_sweep(self, name: str, n: int = 1) -> None:
        self.sweep[name] = self.sweep.get(name, 0) + n

    def record(self) -> dict[str, object]:
        data = asdict(self)
        data["lease"] = str(self.lease)
        data["latency_ms"] = round(self.latency_s * 1000, 1)
        del data["latency_s"]
        return data

    def log(self) -> None:
        """Emit the one stats record of this pass (JSON message; also under ``extra['stats']``)."""
        record = self.record()
        log.info(json.dumps({"event": "coordinator_pass", **record}), extra={"stats": record})
