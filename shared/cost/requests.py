"""The storage requests a run causes, estimated from its attempts (dagq does not count requests
per workflow: a per-run counter would itself cost a write per event).

The figures are per operation as ``bench/bench_concurrent.py`` measures them on the modelled
Azure storage (its ``requests_breakdown``), plus what the real worker adds while a task runs: a
heartbeat (``update_message``) every ``--heartbeat-s``, a cancel check (a HEAD) every
``--cancel-check-s`` and, while the task prints, a live-log append every ``--live-s`` (counted as
if it always printed, and at a young task's rate all along: an upper bound; a long task's checks,
appends and heartbeats slow down with its age, ``worker_agent/cadence.py``). A cache hit costs
one GET, plus one PUT for a blob output; recording an entry one PUT, plus one GET for a blob
output.
"""

from __future__ import annotations

from dataclasses import dataclass

PER_WORKFLOW = 7.0
"""Submit (definition, state, index row, activate send), the activate's receive share and delete,
the first reads of definition and state by the coordinator, and the final index projection."""
PER_ATTEMPT = 7.6
"""Task send, receive share, claim, delete; completion send, receive share, delete; the state
flush and index projection it causes (amortised); the cancel check and the log upload."""
HEARTBEAT_S = 20.0
"""The worker's default heartbeat interval (a third of ``--visibility-s`` 60)."""
CANCEL_CHECK_S = 5.0
"""The worker's default ``--cancel-check-s``."""
LIVE_LOG_S = 5.0
"""The worker's default ``--live-s``."""
PER_CACHE_HIT = 2.0
"""The entry's GET and, for a blob output, its PUT as this attempt's output (upper bound)."""


@dataclass(frozen=True)
class RequestEstimate:
    """Estimated storage requests of one run."""

    requests: float
    attempts: int
    cache_hits: int


def estimate_requests(attempts: int, run_s: float, cache_hits: int) -> RequestEstimate:
    """The requests of a workflow whose tasks made ``attempts`` dispatched attempts running
    ``run_s`` seconds in all, and ``cache_hits`` attempts answered from the cache."""
    while_running = run_s / HEARTBEAT_S + run_s / CANCEL_CHECK_S + run_s / LIVE_LOG_S
    total = PER_WORKFLOW + attempts * PER_ATTEMPT + while_running + cache_hits * PER_CACHE_HIT
    return RequestEstimate(requests=round(total, 1), attempts=attempts, cache_hits=cache_hits)
