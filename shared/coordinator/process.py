"""Several partitions in one long-lived process (``python -m shared.coordinator``).

A process serves any subset of the deployment's partitions: one ``Coordinator`` per partition,
each holding that partition's lease while the process runs. Several processes may serve
overlapping subsets; the leases decide who writes, and they balance without talking to each other:

- at start each process tries its partitions in its own random order, a little apart, so processes
  started together take turns instead of one taking everything;
- a partition whose lease is held elsewhere is retried every ``lease_s / 6`` seconds plus
  ``stagger_s`` for every partition this process already holds, so when a process dies (its
  leases expire within a lease period) the least loaded survivors take its partitions first;
- SIGTERM releases every lease at once, for a successor to take without waiting for expiry.

A process started after the others are running is a hot standby for their partitions until one of
them stops or dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Sequence

from shared.coordinator.entry import Coordinator
from shared.coordinator.options import CoordinatorOptions
from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.ports import Storage


def parse_partitions(spec: str, partitions: int) -> list[int]:
    """``"0-3,6"`` -> [0, 1, 2, 3, 6]; ``"all"`` -> every partition below ``partitions``.
    Raises ValueError saying what is wrong."""
    if spec.strip().lower() == "all":
        return list(range(partitions))
    chosen: set[int] = set()
    for part in spec.split(","):
        first, _, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise ValueError(f"invalid partition list {spec!r}: use e.g. 0-3,6 or all") from None
        if not 0 <= low <= high < partitions:
            raise ValueError(
                f"partitions {part.strip()!r} out of range: this deployment has {partitions}"
                f" (0-{partitions - 1}; DAGQ_PARTITIONS)"
            )
        chosen.update(range(low, high + 1))
    return sorted(chosen)


class PartitionSet:
    """The coordinators of ``partitions`` in this process."""

    def __init__(
        self,
        storage: Storage,
        config: Settings | ResourceNames,
        options: CoordinatorOptions,
        partitions: Sequence[int],
        *,
        stagger_s: float = 0.5,
    ) -> None:
        self.options = options
        self.stagger_s = stagger_s
        self.coordinators = {
            p: Coordinator(storage.for_partition(p), config, options, hold_lease=True)
            for p in partitions
        }

    def held(self) -> list[int]:
        """The partitions whose lease this process holds now."""
        return [p for p, c in self.coordinators.items() if c.leadership.held]

    def standby_s(self) -> float:
        """How long to wait before trying a lease held elsewhere again (longer the more this
        process already holds)."""
        return self.options.lease_s / 6 + self.stagger_s * len(self.held())

    async def run(
        self,
        stop: asyncio.Event,
        *,
        wait_for_lease: bool = False,
        sweep_every_s: float = 5.0,
        idle_max_s: float = 0.5,
    ) -> None:
        """Serve every partition until ``stop`` is set (LeaseError, as ``Coordinator.run_forever``,
        if a lease is held elsewhere and not ``wait_for_lease``)."""
        order = list(self.coordinators)
        random.shuffle(order)

        async def serve(rank: int, coord: Coordinator) -> None:
            if wait_for_lease:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=rank * self.stagger_s)
            await coord.run_forever(
                stop,
                wait_for_lease=wait_for_lease,
                sweep_every_s=sweep_every_s,
                idle_max_s=idle_max_s,
                standby_s=self.standby_s,
            )

        tasks = [
            asyncio.create_task(serve(rank, self.coordinators[p])) for rank, p in enumerate(order)
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
