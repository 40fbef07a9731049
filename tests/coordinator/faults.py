"""Fault injection for the coordinator's storage calls: a proxy over every port of a Storage.

A ``FaultPlan`` numbers every call the coordinator makes through the proxy. At the chosen call it
"crashes" — raises ``Crash`` (a BaseException, so no ``except Exception`` in the coordinator can
swallow it) before or after the real call — and from then on every call raises too: the process is
dead and nothing more reaches storage. Hooks can instead act at a call (a concurrent writer, a
lease break) and let the coordinator go on.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from shared.storage.ports import Storage


class Crash(BaseException):
    """The coordinator process died at this call."""


Hook = Callable[[str], Awaitable[None]]


@dataclass
class FaultPlan:
    crash_at: int | None = None
    """1-based number of the call that crashes (None: never)."""
    mode: Literal["before", "after"] = "before"
    """Crash instead of the call, or right after it succeeded."""
    only: set[str] | None = None
    """Count only calls whose name is in this set (e.g. {"workflows.write_state"})."""
    hooks: dict[int, Hook] = field(default_factory=dict)
    """Call number -> coroutine run just before that call (it gets the call's name)."""
    error: type[BaseException] = Crash
    """What the faulty call raises; only a Crash kills the process (every later call fails)."""
    calls: list[str] = field(default_factory=list)
    dead: bool = False

    async def call(self, name: str, fn: Callable[..., Awaitable[Any]], *a: Any, **kw: Any) -> Any:
        if self.dead:
            raise Crash(f"dead: {name}")
        if self.only is not None and name not in self.only:
            return await fn(*a, **kw)
        self.calls.append(name)
        number = len(self.calls)
        hook = self.hooks.get(number)
        if hook is not None:
            await hook(name)
        if number == self.crash_at and self.mode == "before":
            self.dead = self.error is Crash
            raise self.error(f"fault before call {number}: {name}")
        result = await fn(*a, **kw)
        if number == self.crash_at and self.mode == "after":
            self.dead = self.error is Crash
            raise self.error(f"fault after call {number}: {name}")
        return result


class _Proxy:
    def __init__(self, target: Any, plan: FaultPlan, label: str) -> None:
        self._target = target
        self._plan = plan
        self._label = label

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.iscoroutinefunction(attr):
            label = f"{self._label}.{name}"

            async def wrapped(*a: Any, **kw: Any) -> Any:
                return await self._plan.call(label, attr, *a, **kw)

            return wrapped
        if self._label == "queues" and name == "get":
            return lambda queue_name: _Proxy(attr(queue_name), self._plan, "queue")
        return attr


def faulty(storage: Storage, plan: FaultPlan) -> Storage:
    """``storage`` with every port call going through ``plan``."""
    return Storage(
        workflows=_Proxy(storage.workflows, plan, "workflows"),
        outputs=_Proxy(storage.outputs, plan, "outputs"),
        deadletters=_Proxy(storage.deadletters, plan, "deadletters"),
        lease=_Proxy(storage.lease, plan, "lease"),
        queues=_Proxy(storage.queues, plan, "queues"),
        index=_Proxy(storage.index, plan, "index"),
        event_queue=_Proxy(storage.event_queue, plan, "events"),
        event_poison_queue=_Proxy(storage.event_poison_queue, plan, "poison"),
        partition=storage.partition,
        registry=_Proxy(storage.registry, plan, "registry"),
        cache=_Proxy(storage.cache, plan, "cache"),
        schedules=_Proxy(storage.schedules, plan, "schedules"),
    )
