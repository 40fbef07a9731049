"""What one workflow update counts: events applied, dispatches sent, events dead-lettered, deferred
or set aside. Merged into the pass's stats (``stats.py``) only if the update succeeds."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.coordinator.envelope import Envelope
from shared.messages import TaskCompletedEvent


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
    other_inputs: int = 0
    """Reports not taken: the attempt ran on other inputs than the state recorded (a re-sent
    dispatch carried others); the task runs again (``shared.engine.transitions``)."""
