"""Result caching (opt-in per task with ``cache:``): the key of a task's result, the cache
entry's format, and the coordinator's look-up and record steps.

``key.py`` and ``entry.py`` are pure (no storage, no clock); the coordinator's look-up and record
steps around them are ``shared.coordinator.results``. docs/workflow-format.md says exactly what
is and is not in a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.caching.entry import (
        CachedFrom as CachedFrom,
    )
    from shared.caching.entry import (
        CacheEntry as CacheEntry,
    )
    from shared.caching.entry import (
        decode_entry as decode_entry,
    )
    from shared.caching.entry import (
        encode_entry as encode_entry,
    )
    from shared.caching.key import (
        CacheInputs as CacheInputs,
    )
    from shared.caching.key import (
        cache_key as cache_key,
    )
    from shared.caching.key import (
        key_of_task as key_of_task,
    )
    from shared.caching.key import (
        output_digest as output_digest,
    )

__all__, __getattr__ = lazy_face(__name__, __file__)
