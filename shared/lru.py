"""A small least-recently-used map (the definition and state caches)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def _one(_value: object) -> int:
    return 1


class Lru(Generic[K, V]):
    """Entries whose weights add up to at most ``capacity``; the least recently used go first.

    ``weigh`` gives an entry's weight (default 1: ``capacity`` counts entries; the coordinator's
    caches weigh an estimate of an entry's memory, so the bound is in bytes whatever the workflows'
    sizes). An entry heavier than ``capacity`` on its own is not kept.
    """

    def __init__(self, capacity: int, weigh: Callable[[V], int] = _one) -> None:
        self.capacity = capacity
        self.weigh = weigh
        self.weight = 0
        """The weights of the entries held, added up (at most ``capacity``)."""
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: K, value: V) -> None:
        self.pop(key)
        weight = self.weigh(value)
        if weight > self.capacity:
            return
        self._items[key] = (value, weight)
        self.weight += weight
        while self.weight > self.capacity:
            _, (_, dropped) = self._items.popitem(last=False)
            self.weight -= dropped

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        self.weight -= item[1]
        return item[0]

    def __len__(self) -> int:
        return len(self._items)
