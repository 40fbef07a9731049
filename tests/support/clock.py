"""A clock tests move on by hand (memory storage visibility, leases, retry delays)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeClock:
    """A clock tests move on by hand (memory storage visibility, leases, retry delays)."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
