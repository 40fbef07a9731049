"""Result caching (opt-in per task with ``cache:``): the key of a task's result, the cache
entry's format, and the coordinator's look-up and record steps.

``key.py`` and ``entry.py`` are pure (no storage, no clock); the coordinator's look-up and record
steps around them are ``shared.coordinator.results``. docs/workflow-format.md says exactly what
is and is not in a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.caching.entry import CachedFrom, CacheEntry, decode_entry, encode_entry
    from shared.caching.key import CacheInputs, cache_key, key_of_task, output_digest

__all__ = [
    "CacheEntry",
    "CacheInputs",
    "CachedFrom",
    "cache_key",
    "decode_entry",
    "encode_entry",
    "key_of_task",
    "output_digest",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.caching.entry": ("CacheEntry", "CachedFrom", "decode_entry", "encode_entry"),
        "shared.caching.key": ("CacheInputs", "cache_key", "key_of_task", "output_digest"),
    },
)
