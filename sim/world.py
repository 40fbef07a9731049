"""One simulated run: the whole system in one process, on one seed.

``simulate(seed)`` builds the storage account, P partitions with several competing Functions
instances each, task workers, the users and the chaos; runs a fault phase (every fault of
``FaultRates`` on), then a quiet phase (no faults) until everything converged or a time limit;
and returns the oracle's verdict with the run's trace. Every choice comes from
``random.Random(seed)``; time is virtual (``sim.loop``); so a seed replays exactly.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import JsonValue

from shared.coordinator import CoordinatorOptions
from shared.definition.workflow import CompiledWorkflow
from shared.names import ResourceNames
from shared.storage.tolerated import TOLERATED
from sim import loop as vloop
from sim.actors import chaos, forger, functions_host, restarting, worker
from sim.backlog_repairs import (
    LAG_BURST_LEAD_S,
    LAG_SUBMITS,
    LAG_WORKERS,
    BacklogRepairs,
    Lag,
)
from sim.faults import FaultRates, Tooth
from sim.invariants import Oracle
from sim.keys import SIGNING_KEY
from sim.readers import check_recent_dead_letters, registry_forger
from sim.schedule_book import ScheduleBook
from sim.schedules import seeded
from sim.storage import Actor, Platform, deterministic_ids, new_storage
from sim.teeth import planted
from sim.users import OPS, operation, users


@dataclass(frozen=True)
class SimConfig:
    """The shape of a run (the seed picks the partition count and instance counts within it)."""

    fault_s: float = 150.0
    """Virtual seconds with faults on (users act during this phase only)."""
    quiet_max_s: float = 3600.0
    """Longest quiet phase before unfinished work counts as wedged."""
    op_gap_s: float = 8.0
    """Mean gap between two user operations."""
    max_partitions: int = 3
    max_instances: int = 3
    """Functions instances per partition (at least 2: the lease is always contended)."""
    workers: int = 3
    max_skew_s: float = 2.0
    """Each process's wall clock is off by up to this much."""
    max_poll_s: float = 8.0
    """Longest idle pause of a polling process."""
    faults: FaultRates = field(default_factory=FaultRates)
    ops: dict[str, int] = field(default_factory=lambda: dict(OPS))
    """The users' operations and their weights (every operation, by default)."""


OPTIONS = CoordinatorOptions(
    lease_s=15,
    activate_repair_after_s=5.0,
    cancel_grace_s=60.0,
    empty_queue_repair_after_s=30.0,
    signing_key=SIGNING_KEY,
)
"""The coordinator's options in the simulation: short leases and repairs, so a few virtual
minutes see many hand-overs; task messages and control events signed as the app signs them."""


@dataclass
class Outcome:
    """What one seed did."""

    seed: int
    violations: list[str]
    trace: list[str]
    workflows: int
    ended_at: float

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def digest(self) -> str:
        """A fingerprint of the whole trace (equal for equal runs)."""
        return hashlib.sha256("\n".join(self.trace).encode()).hexdigest()[:16]


class World:
    """Everything one run shares (the processes reach each other only through storage)."""

    def now(self) -> float:
        """Virtual time (the storage's clock; each process's own clock is skewed from it)."""
        return self.loop.now

    def __init__(self, seed: int, config: SimConfig, teeth: frozenset[Tooth]) -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, vloop.VirtualLoop)
        self.loop: vloop.VirtualLoop = loop
        self.seed = seed
        self.rng = random.Random(seed)
        self.config = config
        self.platform = Platform(self.rng, lambda: self.now(), config.faults, teeth)
        self.raw = new_storage(self.platform)
        self.names: ResourceNames = self.raw.names
        self.options = OPTIONS
        self.partitions = self.rng.randint(1, config.max_partitions)
        self.oracle = Oracle(self.platform, self.raw, self.partitions, OPTIONS.lease_s)
        self.lag = Lag.draw(seed, self.now())
        self.backlog = BacklogRepairs(
            self.platform, self.raw, self.oracle, OPTIONS.empty_queue_repair_after_s
        )
        self.stopping = False
        self.fault_end = self.now() + config.fault_s
        self.submitted: list[str] = []
        self.definitions: dict[str, tuple[CompiledWorkflow, bytes]] = {}
        self.outputs: dict[str, JsonValue] = {}
        self.schedules = ScheduleBook(
            self.platform, self.raw, self.oracle, partitions=self.partitions,
            max_skew_s=config.max_skew_s, submitted=self.submitted, definitions=self.definitions,
        )  # fmt: skip


async def _run(seed: int, config: SimConfig, teeth: frozenset[Tooth]) -> Outcome:
    world = World(seed, config, teeth)
    rng = world.rng
    processes = []
    for p in range(world.partitions):
        for n in range(rng.randint(2, config.max_instances)):
            body = _bind(functions_host, world)
            processes.append(restarting(world, f"c{p}.{n}", body, partition=p))
    for n in range(config.workers):
        processes.append(restarting(world, f"w{n}", _bind(worker, world)))
    if world.lag.on:  # a burst of submits, then workers outpace the lagging coordinators
        processes.append(_from(world.lag.start - LAG_BURST_LEAD_S, _burst(world)))
        for n in range(LAG_WORKERS):
            body = _bind(worker, world)
            processes.append(_from(world.lag.start, restarting(world, f"x{n}", body)))
    tasks = [asyncio.create_task(p) for p in processes]
    tasks.append(asyncio.create_task(chaos(world)))
    tasks.append(asyncio.create_task(forger(world)))
    tasks.append(asyncio.create_task(registry_forger(world)))
    user_ops = asyncio.create_task(users(world))
    await asyncio.sleep(config.fault_s)
    world.platform.faults = FaultRates.quiet()
    world.platform.log("sim", "faults off")
    deadline = world.now() + config.quiet_max_s
    await _converge(world, user_ops, deadline)
    world.platform.log("sim", "stop")
    world.stopping = True
    if not user_ops.done():
        world.oracle.fail("users", "user operations never got an answer")
    world.oracle.final()
    world.schedules.final()
    await check_recent_dead_letters(world)
    for task in [*tasks, user_ops]:
        task.cancel()
    await asyncio.gather(*tasks, user_ops, return_exceptions=True)
    return Outcome(seed, world.oracle.violations, world.platform.trace, len(world.submitted),
                   world.now() - vloop.EPOCH)  # fmt: skip


async def _from(start: float, process: Awaitable[None]) -> None:
    """``process``, started at virtual time ``start``."""
    await asyncio.sleep(start - asyncio.get_running_loop().time())
    await process


async def _burst(world: World) -> None:
    """``LAG_SUBMITS`` workflows submitted at once, just before the lag window."""
    await asyncio.gather(*(operation(world, f"burst{n}", "submit") for n in range(LAG_SUBMITS)))


def _bind(
    body: Callable[[World, Actor, int], Awaitable[None]], world: World
) -> Callable[[Actor, int], Awaitable[None]]:
    async def bound(actor: Actor, generation: int) -> None:
        await body(world, actor, generation)

    return bound


async def _converge(world: World, user_ops: asyncio.Task[None], deadline: float) -> None:
    """Wait (checking every 10 virtual seconds) until everything settled or ``deadline``."""
    for _ in range(int((deadline - world.now()) // 10) + 1):
        if user_ops.done() and _settled(world):
            return
        await asyncio.sleep(10.0)


def _settled(world: World) -> bool:
    """Nothing left to do: every workflow terminal, every queue empty, the index caught up."""
    oracle = world.oracle
    if oracle.unfinished() or any(q.messages for q in world.raw.queues.states.values()):
        return False
    if world.schedules.missing():
        return False
    probe = Oracle.__new__(Oracle)
    probe.__dict__.update(oracle.__dict__, violations=[])
    for workflow_id in world.oracle.workflows:
        state = oracle._state(workflow_id)
        if state is not None:
            probe._check_index(workflow_id, state)
    return not probe.violations


def simulate(seed: int, config: SimConfig | None = None,
             teeth: frozenset[Tooth] = frozenset()) -> Outcome:  # fmt: skip
    """Run one seed to its verdict (in this thread, on a fresh virtual loop)."""
    config = config or SimConfig()
    with (
        _quiet("dagq"),  # the trace says what happened
        deterministic_ids(random.Random(seed ^ 0x5EED)),
        planted(teeth),
        seeded(random.Random(seed ^ 0x5C4ED), teeth),
        _fresh_tolerated(),
    ):
        return vloop.run(_run(seed, config, teeth))


@contextmanager
def _fresh_tolerated() -> Iterator[None]:
    """The process-wide count of tolerated storage failures (``shared.storage.tolerated``)
    starts empty on the virtual clock, and is emptied again after: a run must not see what an
    earlier run in the same process counted or noted (a seed would not replay)."""
    saved = TOLERATED._clock
    TOLERATED.reset(clock=lambda: asyncio.get_running_loop().time())  # virtual time
    try:
        yield
    finally:
        TOLERATED.reset(clock=saved)


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """``logger_name``'s records off for the run, then its level as it was (the process may be a
    test session's, whose later tests read those records)."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
