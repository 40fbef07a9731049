"""``GET /health``: storage, queue depths and each partition's coordinator."""

from __future__ import annotations

from typing import Literal

from shared.views.base import View


class QueueDepth(View):
    """A queue and its approximate number of messages."""

    name: str
    depth: int


class CoordinatorHealth(View):
    """Whether a coordinator holds the lease right now."""

    lease_held: bool


class PartitionHealth(View):
    """One partition's event queue, poison queue and coordinator lease."""

    partition: int
    event_queue: QueueDepth
    poison_queue: QueueDepth
    lease_held: bool


class Health(View):
    """``GET /health`` when storage answers (200).

    ``coordinator``, ``event_queue`` and ``poison_queue`` are partition 0's (as before partitions
    existed); ``partitions`` has every partition of the deployment, 0 first.
    """

    status: Literal["ok"]
    storage: Literal["reachable"]
    coordinator: CoordinatorHealth
    event_queue: QueueDepth
    poison_queue: QueueDepth
    partitions: list[PartitionHealth]


class HealthUnavailable(View):
    """``GET /health`` when storage does not answer or is not configured (503)."""

    status: Literal["unavailable"]
    storage: Literal["unreachable"]
    error: str
