"""The simulated storage account: the in-memory adapters (``shared.storage.memory``, held to the
Azure contract by ``tests/storage/test_contract.py``) seen by each simulated process through a
view that injects the platform's faults into every call.

``Platform`` owns the one RNG, the fault rates, the trace and the oracle's hooks. ``view(actor)``
gives one process (an API instance, a coordinator instance, a worker) a ``Storage`` whose every
port method first waits a random latency, then may fail (503, timeout), take effect and lose its
reply, or kill the process before or after the call (``Crash``: every later call of that process
fails too). Sends may be duplicated or delayed (reordered). Ids, pop receipts and ETags come from
the seed, so a run is reproducible byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import random
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import shared.storage.memory.blobs as memory_blobs
import shared.storage.memory.lease as memory_lease
import shared.storage.memory.queues as memory_queues
from shared.names import ResourceNames
from shared.storage.memory import MemoryQueue, MemoryStorage, memory_storage
from shared.storage.ports import Storage
from shared.storage.repeat import is_repeat, with_repeats
from sim.faults import ConnectionClosed, Crash, FaultRates, Tooth, TransientError

Hook = Callable[["Actor", str, tuple[Any, ...], Any], None]
"""An oracle hook: (actor, call label, arguments, result) -> None (it records violations)."""


def chain_hook(table: dict[str, Hook], op: str, hook: Hook) -> None:
    """Add ``hook`` to ``table``'s hook of ``op``, run after the one already there (the
    invariant books each watch the same storage calls)."""
    first = table.get(op)
    if first is None:
        table[op] = hook
        return

    def both(actor: Actor, label: str, a: tuple[Any, ...], r: Any) -> None:
        first(actor, label, a, r)
        hook(actor, label, a, r)

    table[op] = both


@dataclass(eq=False)
class Actor:
    """One simulated process: its name, whether it died, the leases it believes it acquired."""

    name: str
    partition: int | None = None
    """The partition a coordinator instance serves (None: not a coordinator)."""
    dead: bool = False
    leases: dict[int, str] = field(default_factory=dict)
    """Partition -> the lease id its last successful acquire returned."""


@dataclass
class Platform:
    """Everything a run shares: its RNG, clock, fault rates, planted bugs, trace, oracle hooks."""

    rng: random.Random
    clock: Callable[[], float]
    faults: FaultRates
    teeth: frozenset[Tooth] = frozenset()
    trace: list[str] = field(default_factory=list)
    before: dict[str, Hook] = field(default_factory=dict)
    """Call label -> hook run when a call is issued (before its latency)."""
    effect: dict[str, Hook] = field(default_factory=dict)
    """Call label -> hook run the instant before a call takes effect (after its latency)."""
    after: dict[str, Hook] = field(default_factory=dict)
    """Call label -> hook run the instant a call took effect."""
    lost: dict[str, Hook] = field(default_factory=dict)
    """Call label -> hook run when a call took effect but its caller gets an error (its reply
    was lost, or its connection closed before the answer): the caller never saw what it did."""

    def log(self, actor: str, what: str) -> None:
        self.trace.append(f"{self.clock():.3f} {actor} {what}")

    def chance(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p


@contextlib.contextmanager
def deterministic_ids(rng: random.Random) -> Iterator[None]:
    """Message ids, pop receipts, lease ids and ETags of the memory adapters from ``rng``."""

    class _Ids:
        @staticmethod
        def uuid4() -> uuid.UUID:
            return uuid.UUID(int=rng.getrandbits(128), version=4)

    saved = (
        memory_blobs._etags,
        memory_lease.__dict__["uuid"],
        memory_queues.__dict__["uuid"],
    )
    memory_blobs._etags = itertools.count(1)
    for module in (memory_lease, memory_queues):
        setattr(module, "uuid", _Ids)  # noqa: B010 - the module's own name for uuid, swapped
    try:
        yield
    finally:
        memory_blobs._etags = saved[0]
        setattr(memory_lease, "uuid", saved[1])  # noqa: B010
        setattr(memory_queues, "uuid", saved[2])  # noqa: B010


def new_storage(platform: Platform) -> MemoryStorage:
    """The account every process of a run shares."""
    return memory_storage("sim", clock=platform.clock)


def _describe(args: tuple[Any, ...]) -> str:
    for arg in args:
        if isinstance(arg, str) and len(arg) <= 80:
            return arg
        if hasattr(arg, "workflow_id"):
            return str(arg.workflow_id)
    return ""


STALLING = frozenset({
    "lease.renew", "workflows.write_state", "outputs.delete_prefix", "index.project",
    "index.project_many",
})  # fmt: skip
"""Calls that the ``stall`` fault slows down (see ``FaultRates.stall``): a purge's step 4 too,
whose landing after a re-submit of the id must spare the new workflow's blobs, and the index
projections, whose landing after a newer one must change nothing."""


class _Port:
    """One port of one process's view: every coroutine method goes through ``_call``."""

    def __init__(self, target: Any, view: _View, label: str) -> None:
        self._target = target
        self._view = view
        self._label = label

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.iscoroutinefunction(attr):
            label = f"{self._label}.{name}"

            async def call(*a: Any, **kw: Any) -> Any:
                return await self._view.call(label, self._target, attr, a, kw)

            self.__dict__[name] = call  # later lookups skip __getattr__
            return call
        if self._label == "queues" and name == "get":
            handles: dict[str, _Port] = {}

            def get(queue_name: str) -> _Port:
                if queue_name not in handles:
                    handles[queue_name] = _Port(attr(queue_name), self._view, "queue")
                return handles[queue_name]

            self.__dict__[name] = get
            return get
        return attr


class _View:
    """The fault injector of one process."""

    def __init__(self, platform: Platform, actor: Actor) -> None:
        self.platform = platform
        self.actor = actor

    async def call(
        self,
        label: str,
        target: Any,
        fn: Callable[..., Awaitable[Any]],
        a: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        p = self.platform
        if isinstance(target, MemoryQueue):
            label = f"{label}[{target.name}]"
        what = f"{label}({_describe(a)})"
        # The adapters' one repeat of lost connections (what the Azure adapters do), with the
        # jitter drawn from the run's RNG.
        return await with_repeats(
            lambda: self._try(label, what, target, fn, a, kw),
            lost=lambda error: isinstance(error, ConnectionClosed),
            what=what,
            jitter=lambda: p.rng.uniform(0.8, 1.2),
        )

    async def _try(
        self,
        label: str,
        what: str,
        target: Any,
        fn: Callable[..., Awaitable[Any]],
        a: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        p, actor = self.platform, self.actor
        f = p.faults
        if is_repeat():
            what = f"{what} (repeat)"
        if actor.dead:
            raise Crash(what)
        op = label.split("[")[0]
        if op == "outputs.delete_prefix" and Tooth.PURGE_WHOLE_ID in p.teeth:
            a, kw = (ResourceNames.outputs_prefix(str(a[0]).split("/")[0]),), {}
        a_hooks = a + tuple(kw.values()) if kw else a  # hooks see keywords after positionals
        self._hook(p.before, op, label, a_hooks, None)
        delay = p.rng.expovariate(1 / f.latency_s) if f.latency_s > 0 else 0.0
        if p.chance(f.slow) or (label in STALLING and p.chance(f.stall)):
            delay += p.rng.uniform(0, f.slow_max_s)
        await asyncio.sleep(delay)
        if actor.dead:
            raise Crash(what)
        roll = p.rng.random()
        if roll < f.crash_before:
            return self._die(what, "crash before")
        if roll < f.crash_before + f.transient:
            p.log(actor.name, f"{what} -> 503")
            raise TransientError(f"503 on {what}")
        if roll < f.crash_before + f.transient + f.closed_before:
            p.log(actor.name, f"{what} -> connection closed before it reached storage")
            raise ConnectionClosed(f"connection closed before {what}")
        self._hook(p.effect, op, label, a_hooks, None)
        result = await self._perform(label, target, fn, a, kw)
        self._hook(p.after, op, label, a_hooks, result)
        roll = p.rng.random()
        if roll < f.crash_after:
            return self._die(what, "crash after")
        if roll < f.crash_after + f.reply_lost:
            self._hook(p.lost, op, label, a_hooks, result)
            p.log(actor.name, f"{what} -> done, reply lost")
            raise TransientError(f"timeout on {what} (it took effect)")
        if roll < f.crash_after + f.reply_lost + f.closed_after:
            self._hook(p.lost, op, label, a_hooks, result)
            p.log(actor.name, f"{what} -> done, connection closed before the answer")
            raise ConnectionClosed(f"connection closed after {what} (it took effect)")
        p.log(actor.name, f"{what} -> {_short(result)}")
        return result

    def _hook(
        self, table: dict[str, Hook], op: str, label: str, a: tuple[Any, ...], result: Any
    ) -> None:
        """Run ``table``'s hook for storage operation ``op``, if it has one."""
        hook = table.get(op)
        if hook is not None:
            hook(self.actor, label, a, result)

    def _die(self, what: str, when: str) -> Any:
        self.actor.dead = True
        self.platform.log(self.actor.name, f"{what} -> {when}: process died")
        raise Crash(f"{when} {what}")

    async def _perform(
        self,
        label: str,
        target: Any,
        fn: Callable[..., Awaitable[Any]],
        a: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        p = self.platform
        name = label.split("[")[0]
        if name == "queue.send":
            return await self._send(target, a, kw)
        if name == "workflows.write_state" and Tooth.NO_IF_MATCH in p.teeth:
            workflow_id, data, _etag, metadata = a
            current = await target.read_state(workflow_id)
            return await fn(workflow_id, data, current.etag, metadata)
        result = await fn(*a, **kw)
        if name == "queue.receive" and Tooth.FORGET_REDELIVERY in p.teeth:
            state = target._state
            for message in result:  # once received, never visible again
                state.messages[message.id].visible_at = float("inf")
        if name == "lease.acquire" and result is not None:
            self.actor.leases[self.actor.partition or 0] = result
        return result

    async def _send(self, target: MemoryQueue, a: tuple[Any, ...], kw: dict[str, Any]) -> None:
        p, f = self.platform, self.platform.faults
        (text,) = a
        delay = float(kw.get("delay_s", 0.0))
        if p.chance(f.reorder):
            delay += p.rng.uniform(0, f.reorder_max_s)
        await target.send(text, delay_s=delay)
        if p.chance(f.duplicate):
            p.log(self.actor.name, f"queue.send[{target.name}] duplicated")
            await target.send(text, delay_s=delay + p.rng.uniform(0, f.reorder_max_s))


def _short(result: Any) -> str:
    if isinstance(result, list):
        return f"{len(result)} items"
    if isinstance(result, bytes | tuple):
        return "data"
    text = repr(result)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class ActorStorage(Storage):
    """A process's view of the shared account (partition views stay the process's)."""

    raw: MemoryStorage = field(kw_only=True)
    actor_view: _View = field(kw_only=True)

    def for_partition(self, partition: int) -> ActorStorage:
        if partition == self.partition:
            return self
        return _wrap(self.raw.for_partition(partition), self.actor_view)


def _wrap(raw: MemoryStorage, v: _View) -> ActorStorage:
    return ActorStorage(
        workflows=_Port(raw.workflows, v, "workflows"),
        outputs=_Port(raw.outputs, v, "outputs"),
        deadletters=_Port(raw.deadletters, v, "deadletters"),
        lease=_Port(raw.lease, v, "lease"),
        queues=_Port(raw.queues, v, "queues"),
        index=_Port(raw.index, v, "index"),
        event_queue=_Port(raw.event_queue, v, "queue"),
        event_poison_queue=_Port(raw.event_poison_queue, v, "queue"),
        registry=_Port(raw.registry, v, "registry"),
        cache=_Port(raw.cache, v, "cache"),
        schedules=_Port(raw.schedules, v, "schedules"),
        partition=raw.partition,
        raw=raw,
        actor_view=v,
    )


def view(platform: Platform, raw: MemoryStorage, actor: Actor) -> ActorStorage:
    """``actor``'s faulty view of ``raw`` (the partition view of a coordinator's partition)."""
    base = raw.for_partition(actor.partition) if actor.partition is not None else raw
    return _wrap(base, _View(platform, actor))


__all__ = ["Actor", "ActorStorage", "Platform", "deterministic_ids", "new_storage", "view"]
