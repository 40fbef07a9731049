"""The coordinator's hold on its prefix: the sentinel blob lease, taken, renewed and given up.

Writing is allowed only while ``ok()``: the lease is held and was renewed recently enough that it
cannot have expired, so a coordinator that lost it (expired, broken, taken over) stops before its
next state write or dispatch (docs/coordinator.md, "One pass", step 1).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from shared.coordinator.options import CoordinatorOptions
from shared.storage.ports import Lease

log = logging.getLogger("dagq.coordinator")


class Leadership:
    """One coordinator's lease. ``on_lost`` runs when a held lease turns out to be gone, and when
    a lease is acquired anew (the coordinator then drops whatever it cached under an earlier
    tenure)."""

    def __init__(
        self, lease: Lease, options: CoordinatorOptions, on_lost: Callable[[], None]
    ) -> None:
        self._lease = lease
        self._options = options
        self._on_lost = on_lost
        self._lease_id: str | None = None
        self._renewed_at = 0.0
        self.lost = False
        """Set when a renewal during a pass found the lease gone."""
        self.acquisitions = 0
        """How often this coordinator acquired the lease (a hand-over each time but the first)."""
        self.before_release: Callable[[], Awaitable[None]] | None = None
        """Run before the lease is given up while it is still safe to write (the projector writes
        the index rows it was holding back)."""

    async def take(self) -> bool:
        """Hold the lease: keep it (renewing when due) or acquire it. False if another holds it."""
        if self._lease_id is not None:
            if time.monotonic() - self._renewed_at < self._options.renew_interval_s:
                return True
            if await self._lease.renew(self._lease_id):
                self._renewed_at = time.monotonic()
                return True
            self._lease_id = None
            self._on_lost()
        lease_id = await self._lease.acquire(self._options.lease_s)
        if lease_id is None:
            return False
        # A new tenure: others may have held the lease and written since this coordinator last
        # did, so nothing it cached before is known to be current (a no-op update would decide
        # from it without any ETag check, e.g. dead-letter a completion as never dispatched).
        self._on_lost()
        self._lease_id = lease_id
        self._renewed_at = time.monotonic()
        self.lost = False
        self.acquisitions += 1
        return True

    @property
    def held(self) -> bool:
        """Whether this coordinator believes it holds the lease (``ok()`` says if it may write)."""
        return self._lease_id is not None

    def ok(self) -> bool:
        """Whether writing is allowed: the lease is held and was renewed recently enough that it
        cannot have expired (a margin of a fifth of its duration)."""
        return (
            self._lease_id is not None
            and not self.lost
            and time.monotonic() - self._renewed_at < self._options.lease_s * 0.8
        )

    def drop(self) -> None:
        """Forget a lease that is lost (nothing to release)."""
        self._lease_id = None

    async def release(self) -> None:
        """Give the lease up (no error if it was lost: it expires on its own)."""
        if self.before_release is not None and self.ok():
            try:
                await self.before_release()
            except Exception as exc:  # derived data only: the index-repair sweep mends it
                log.warning("writing held-back index rows failed: %r", exc)
        lease_id, self._lease_id = self._lease_id, None
        if lease_id is not None:
            try:
                await self._lease.release(lease_id)
            except Exception as exc:
                log.warning("could not release the coordinator lease: %r", exc)

    async def renew_while_working(self) -> None:
        """Renew every renew interval until cancelled, or until the lease turns out lost."""
        while True:
            await asyncio.sleep(self._options.renew_interval_s)
            lease_id = self._lease_id
            if lease_id is None:
                return
            try:
                ok = await self._lease.renew(lease_id)
            except Exception as exc:  # transient: ok() stops writes if it lasts
                log.warning("lease renewal failed: %r", exc)
                continue
            if not ok:
                log.error("coordinator lease lost: stopping before the next write")
                self.lost = True
                return
            self._renewed_at = time.monotonic()
