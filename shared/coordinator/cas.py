"""The state blob's optimistic-concurrency loop, on its own: change the state in memory, write it
with If-Match on the ETag it was read at, and on 412 (someone else wrote) read it again and redo
the change. The change must be idempotent (re-applying events is).

Each write counts itself in the state (``RuntimeState.writes``): with the run, that is the version
of the index row projected from it, so a projection landing late never replaces a newer one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from shared.coordinator.state_cache import CachedState
from shared.engine.state import RuntimeState
from shared.errors import FlushConflictsError, StaleStateError


async def read_modify_write(
    cached: CachedState,
    *,
    change: Callable[[RuntimeState], Awaitable[None]],
    encode: Callable[[RuntimeState], bytes],
    write: Callable[[RuntimeState, bytes, str], Awaitable[str]],
    reread: Callable[[], Awaitable[CachedState]],
    attempts: int,
    on_conflict: Callable[[], None],
) -> tuple[CachedState, bool]:
    """Change ``cached.state`` and write it back unless it encodes as before; return the state as
    stored and whether it was written. ``write(state, data, etag)`` returns the new ETag or raises
    StaleStateError; after ``attempts`` conflicts, FlushConflictsError."""
    for attempt in range(1, attempts + 1):
        await change(cached.state)
        data = encode(cached.state)
        if data == cached.data:
            return cached, False
        if cached.state.incarnation_blobs:  # a new version of the state: its rows' version
            cached.state.writes += 1
            data = encode(cached.state)
        try:
            etag = await write(cached.state, data, cached.etag)
        except StaleStateError:
            on_conflict()
            if attempt == attempts:
                break
            cached = await reread()
            continue
        return CachedState(cached.state, etag, data), True
    raise FlushConflictsError(f"{attempts} flush conflicts in a row")
