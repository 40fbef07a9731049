"""A budget of bytes held at once by concurrent steps whose sizes are known only once they ran
(a cache look-up learns its entry's size when the GET returns).

A step reserves an estimate before it starts: the size of the latest step that held something
(at first the whole budget, so the very first step runs alone; while steps hold nothing, a few
KiB), and is admitted while the bytes held plus its estimate fit the budget, or when nothing is
held. Once it knows its size it says so (``resize``), and gives everything back when it ends. So
while the sizes stay alike the bytes held stay within the budget; a step much larger than the
ones before it can overshoot once, by at most the steps admitted meanwhile (the caller bounds how
many run at once).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

FLOOR_BYTES = 4096
"""The smallest estimate (after steps that held nothing)."""


@dataclass
class Claim:
    """What one admitted step counts against the budget."""

    bytes: int


class ByteBudget:
    """At most ``limit`` bytes held at once by the steps admitted through ``reserve``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.estimate = limit
        self._sized = False
        """Whether a step has held something yet."""
        self._changed = asyncio.Condition()

    def _fits(self) -> bool:
        return self.held == 0 or self.held + self.estimate <= self.limit

    @asynccontextmanager
    async def reserve(self) -> AsyncIterator[Claim]:
        """Wait until the next step fits, then hold its estimate until the block ends."""
        async with self._changed:
            await self._changed.wait_for(self._fits)
            claim = Claim(self.estimate)
            self.held += claim.bytes
        try:
            yield claim
        finally:
            async with self._changed:
                self.held -= claim.bytes
                self._changed.notify_all()

    def resize(self, claim: Claim, size: int) -> None:
        """The step of ``claim`` holds ``size`` bytes (not its estimate): count that, and make it
        the estimate of the next ones."""
        self.held += size - claim.bytes
        claim.bytes = size
        if size > 0 or not self._sized:
            self.estimate = min(self.limit, max(FLOOR_BYTES, size))
            self._sized = self._sized or size > 0
