"""A partition's coordinator lease in memory: one holder at a time, expiry by the clock, break at
once."""

from __future__ import annotations

import uuid

from shared.storage.memory.clock import Clock
from shared.storage.repeat import call_state
from shared.storage.rules import check_lease_duration


class MemoryLease:
    """The sentinel blob's lease: one holder at a time, expiry by the clock, break at once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lease_id: str | None = None
        self.duration_s = 0
        self.expires_at: float | None = None
        """None with a lease_id: an infinite lease."""
        self.broken = False

    def _active(self) -> bool:
        if self.lease_id is None or self.broken:
            return False
        return self.expires_at is None or self.clock() < self.expires_at

    def _until(self, duration_s: int) -> float | None:
        return None if duration_s == -1 else self.clock() + duration_s

    async def acquire(self, duration_s: int) -> str | None:
        check_lease_duration(duration_s)
        # Azure's acquire proposes a lease id, the same on every try of one call; proposing the
        # id that holds the lease renews it (a repeat whose first try took the lease).
        state = call_state()
        if self._active():
            if self.lease_id is None or state.get("lease_id") != self.lease_id:
                return None
            self.duration_s = duration_s
            self.expires_at = self._until(duration_s)
            return self.lease_id
        self.lease_id = state["lease_id"] = state.get("lease_id") or str(uuid.uuid4())
        self.broken = False
        self.duration_s = duration_s
        self.expires_at = self._until(duration_s)
        return self.lease_id

    async def renew(self, lease_id: str) -> bool:
        # Azure renews an expired lease too, as long as nobody took it since; never a broken one.
        if self.lease_id != lease_id or self.broken:
            return False
        self.expires_at = self._until(self.duration_s)
        return True

    async def release(self, lease_id: str) -> None:
        if self.lease_id == lease_id:
            self.lease_id = None
            self.expires_at = None
            self.broken = False

    async def break_lease(self) -> None:
        if self.lease_id is not None:
            self.broken = True

    async def is_held(self) -> bool:
        return self._active()
