"""What the coordinator keeps between passes: compiled definitions and states with their ETags.

Definitions are immutable, so a cached one is always right. A cached state is exactly what the blob
held at ``etag`` when this coordinator last read or wrote it; if another writer moved the blob on
(it should not: one writer), the next flush gets a 412 and the coordinator re-reads. Because the
engine mutates states in place, a state is *taken out* of the cache while a pass works on it and put
back only after a successful flush, so a failed pass never leaves a half-applied state behind.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from shared.workflow import CompiledWorkflow

if TYPE_CHECKING:
    from shared.state import RuntimeState

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A small least-recently-used map."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class CachedState:
    """A state as stored at ``etag``; ``data`` is its encoding (to tell a no-op from a change)."""

    state: RuntimeState
    etag: str
    data: bytes


class WorkflowCache:
    """Definitions and states of recently active workflows."""

    def __init__(self, definitions: int = 512, states: int = 256) -> None:
        self.definitions: Lru[str, CompiledWorkflow] = Lru(definitions)
        self._states: Lru[str, CachedState] = Lru(states)

    def take_state(self, workflow_id: str) -> CachedState | None:
        """Remove and return the cached state (the caller puts it back after a good flush)."""
        return self._states.pop(workflow_id)

    def put_state(self, workflow_id: str, cached: CachedState) -> None:
        self._states.put(workflow_id, cached)

    def forget(self, workflow_id: str) -> None:
        self._states.pop(workflow_id)

    def clear(self) -> None:
        """Drop every state (after the lease was lost: another coordinator may have written)."""
        self._states = Lru(self._states.capacity)
