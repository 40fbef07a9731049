"""Machine lives: how long each worker machine was up, kept after it is gone, so that cost reports
can put the pool's VM-hours (boot and idle tail included) beside the tasks' GPU-hours.

A worker record (``shared.storage.registry.WorkerRecord``) is removed on a clean stop, and it
describes one agent, not the machine: a pool VM runs one agent per queue. A machine life is one
row per machine boot, written by its agents at start, every few minutes, and at a clean stop:

- ``machine``: the host name and the kernel's boot time (``btime`` in ``/proc/stat``), so that
  every agent of one boot writes one row;
- ``booted_at``: since when the machine counts: its boot when the agent started within
  ``BOOT_COUNTS_WITHIN_S`` of it (a pool VM: its boot is part of what the pool paid for),
  else the agent's start (a long-lived machine or a container: only the agent's time counts);
- ``last_seen``: the latest write (a clean stop writes one at once).

The rows sit in the registry table under one partition per month of ``booted_at``
(``machine_partition``), so a report finds a machine by when it counts, whenever its kernel
booted; it reads the months it covers and the one before, each bounded. (Two agents of a long-lived
machine started either side of a month's turn write two rows.)
What a machine's agents cannot see is not counted: the minutes from its last write to its
deletion, and a machine that never started an agent.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

BOOT_COUNTS_WITHIN_S = 3600.0
"""An agent that starts within this long of its machine's boot counts the machine from boot."""
MACHINE_NOTE_EVERY_S = 300.0
"""How often an agent refreshes its machine's row (besides at its start and clean stop): a
machine that dies uncleanly is counted until at most this long before its end."""
MAX_HOST_CHARS = 255
MAX_VM_SIZE_CHARS = 64
MACHINE_PARTITION_PREFIX = "machine-"


@dataclass(frozen=True)
class MachineLife:
    """One machine boot's time in the deployment, as its agents saw it."""

    host: str
    booted_at: float
    """Since when the machine counts (see the module's docstring)."""
    last_seen: float
    """Its agents' latest write (their clock)."""
    vm_size: str = ""
    """The VM size its agents were told (``DAGQ_WORKER_VM_SIZE``; empty: not a pool VM, or not
    told)."""
    gpus: int = 0
    """GPUs its agents hand out."""
    boot: float | None = None
    """The kernel's boot time, which every agent of the boot agrees on (None: not known, then
    ``booted_at``)."""

    @property
    def machine(self) -> str:
        """The row's identity: the host and the boot second."""
        return f"{self.host}@{int(self.boot_key)}"

    @property
    def boot_key(self) -> float:
        """The boot time the row is filed under (``boot``, else ``booted_at``)."""
        return self.booted_at if self.boot is None else self.boot

    def hours_within(self, since: float, until: float) -> float:
        """Hours of this life inside [``since``, ``until``]."""
        start, end = max(self.booted_at, since), min(self.last_seen, until)
        return max(0.0, end - start) / 3600.0


def bounded_life(life: MachineLife) -> MachineLife:
    """``life`` as stored: texts cut, times finite and ordered, counts in range. ValueError when
    a time is not a finite, non-negative number."""
    booted, seen = float(life.booted_at), float(life.last_seen)
    if not (math.isfinite(booted) and math.isfinite(seen)) or booted < 0 or seen < 0:
        raise ValueError(f"machine {life.host[:40]!r}: its times are not finite")
    return MachineLife(
        host=life.host[:MAX_HOST_CHARS],
        booted_at=booted,
        last_seen=max(booted, seen),
        vm_size=life.vm_size[:MAX_VM_SIZE_CHARS],
        gpus=max(0, min(int(life.gpus), 1024)),
        boot=float(int(life.boot)) if life.boot is not None and 0 <= life.boot < 1e11 else booted,
    )


def machine_partition(booted_at: float) -> str:
    """The registry partition of a machine booted at ``booted_at``: ``machine-YYYYMM`` (UTC)."""
    return MACHINE_PARTITION_PREFIX + time.strftime("%Y%m", time.gmtime(booted_at))


def partitions_between(since: float, until: float) -> list[str]:
    """The partitions a report of [``since``, ``until``] reads: every month in it, and the one
    before ``since`` (a machine booted late in a month and still up early in the next)."""
    year, month = time.gmtime(since)[:2]
    year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    last = time.gmtime(max(since, until))[:2]
    out: list[str] = []
    while (year, month) <= last:
        out.append(f"{MACHINE_PARTITION_PREFIX}{year:04d}{month:02d}")
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)
    return out


def kernel_boot(proc_stat: Path = Path("/proc/stat")) -> float | None:
    """The kernel's boot time (``btime``), None where ``/proc/stat`` does not say."""
    try:
        for line in proc_stat.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("btime "):
                return float(int(line.split()[1]))
    except (OSError, ValueError, IndexError):
        pass
    return None


def counts_from(agent_start: float, boot: float | None) -> float:
    """Since when an agent started at ``agent_start`` counts its machine: its boot when within
    ``BOOT_COUNTS_WITHIN_S`` of it, else the agent's start (the second)."""
    if boot is not None and 0 <= agent_start - boot <= BOOT_COUNTS_WITHIN_S:
        return boot
    return float(int(agent_start))
