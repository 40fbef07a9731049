"""How far behind a partition's event queue is: the age of its oldest visible event.

The sweep's empty-queue repair re-sends a queued attempt whose task queue holds no message, after
``empty_queue_repair_after_s`` plus this backlog: under a backlog, a task's report still waiting on
the event queue is why its state says queued, not a lost message (docs/capacity.md: re-sent
dispatches under a backlog, 0.08 per task at 10,000 workflows before).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from shared.storage.ports import Storage

log = logging.getLogger("dagq.coordinator")


async def event_backlog_s(storage: Storage, clock: Callable[[], float]) -> float:
    """Seconds the oldest visible event of ``storage``'s event queue has waited (0 when there is
    none, or when the queue cannot be read: then the plain grace holds, as before)."""
    try:
        oldest = await storage.event_queue.oldest_visible_at()
    except Exception as exc:  # one peek per sweep; an unknown backlog is no backlog
        log.warning("cannot read the event queue's oldest event: %r", exc)
        return 0.0
    return 0.0 if oldest is None else max(0.0, clock() - oldest)
