"""What the coordinator keeps between passes: states with their ETags (compiled definitions are
cached once per process, shared with the API, in ``shared.readback.workflow_reads``).

A cached state is exactly what the blob held at ``etag`` when this coordinator last read or wrote
it; if another writer moved the blob on (it should not: one writer), the next flush gets a 412 and
the coordinator re-reads. Because the engine mutates states in place, a state is *taken out* of the
cache while a pass works on it and put back only after a successful flush, so a failed pass never
leaves a half-applied state behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.lru import Lru

if TYPE_CHECKING:
    from shared.engine.state import RuntimeState


@dataclass
class CachedState:
    """A state as stored at ``etag``; ``data`` is its encoding (to tell a no-op from a change)."""

    state: RuntimeState
    etag: str
    data: bytes


STATE_BYTES_PER_TASK = 200
"""Estimated memory of one task's columns in a decoded state (tracemalloc: about 70 bytes in a new
state; more once attempts, times and outputs are filled in)."""
STATE_BYTES_FIXED = 4096
"""Estimated memory of a decoded state apart from its tasks (about 2.6 KB measured)."""


def state_weight(cached: CachedState) -> int:
    """An estimate of what ``cached`` holds in memory, in bytes: its encoding plus its decoding."""
    tasks, carried = len(cached.state.codes), cached.state.definition
    decoded = STATE_BYTES_FIXED + STATE_BYTES_PER_TASK * tasks + len(carried or b"")
    return len(cached.data) + decoded


class WorkflowCache:
    """States of recently active workflows (definitions: ``shared.readback.workflow_reads``), at
    most ``max_bytes`` of them by ``state_weight``.

    Sized for a partition's whole active set (``DAGQ_STATE_CACHE_MB``): each pass and each sweep
    visits the workflows it touches in no useful order, so an LRU smaller than the active set misses
    on nearly every visit (256 states with 1,250 active workflows per partition cost a state read
    per visit: 2.1 requests per task in ``bench_concurrent``).
    """

    def __init__(self, max_bytes: int) -> None:
        self._states: Lru[str, CachedState] = Lru(max_bytes, state_weight)

    def take_state(self, workflow_id: str) -> CachedState | None:
        """Remove and return the cached state (the caller puts it back after a good flush)."""
        return self._states.pop(workflow_id)

    def peek(self, workflow_id: str) -> CachedState | None:
        """The cached state, left in place (to compare, never to mutate)."""
        return self._states.get(workflow_id)

    def put_state(self, workflow_id: str, cached: CachedState) -> None:
        self._states.put(workflow_id, cached)

    def forget(self, workflow_id: str) -> None:
        self._states.pop(workflow_id)

    def clear(self) -> None:
        """Drop every state (after the lease was lost: another coordinator may have written)."""
        self._states = Lru(self._states.capacity, state_weight)
