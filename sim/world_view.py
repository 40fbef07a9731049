"""What the actors and the users see of a run: the ``World`` protocol.

``sim.world`` builds the run (its ``World`` is the one implementation) and starts the actors of
``sim.actors`` and the users of ``sim.users``; they take the run as this protocol, so neither
imports ``sim.world`` and no module of the simulation imports another in a circle.
"""

from __future__ import annotations

import random
from typing import Protocol

from shared.coordinator import CoordinatorOptions
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from sim.backlog_repairs import Lag
from sim.invariants import Oracle
from sim.schedule_book import ScheduleBook
from sim.storage import Platform


class RunShape(Protocol):
    """The parts of the run's configuration (``sim.world.SimConfig``) the actors and users read."""

    @property
    def max_skew_s(self) -> float:
        """Each process's wall clock is off by up to this much."""

    @property
    def max_poll_s(self) -> float:
        """Longest idle pause of a polling process."""

    @property
    def op_gap_s(self) -> float:
        """Mean gap between two user operations."""

    @property
    def ops(self) -> dict[str, int]:
        """The users' operations and their weights."""


class World(Protocol):
    """Everything one run shares (the processes reach each other only through storage)."""

    seed: int
    rng: random.Random
    platform: Platform
    raw: MemoryStorage
    names: ResourceNames
    options: CoordinatorOptions
    partitions: int
    oracle: Oracle
    stopping: bool
    fault_end: float
    submitted: list[str]
    definitions: dict[str, tuple[CompiledWorkflow, bytes]]
    schedules: ScheduleBook
    lag: Lag

    @property
    def config(self) -> RunShape:
        """The run's shape."""

    def now(self) -> float:
        """Virtual time (the storage's clock; each process's own clock is skewed from it)."""
