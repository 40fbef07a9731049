"""A Storage that behaves like Azure Storage's latency and scalability targets, over another one.

Benchmarks wrap the in-memory storage with it so that what they measure is what the coordinator
does against Azure's per-operation latency and throughput limits, not against Azurite's CPU (which
tops out near 1,000 operations/s on these machines). Every port call waits its operation's latency
and takes a slot from each rate limit it counts against, waiting when a limit is exhausted (Azure
answers 503 Server Busy and the SDK's retry policy backs off; waiting models the same throughput
without the retry noise). The figures and their sources are in ``docs/capacity.md``.

``slowdown`` runs the model in slow motion: every latency multiplied and every rate divided by it,
so a 2-core benchmark machine can drive eight partitions without its own CPU becoming the limit.
Ratios (scaling efficiency, operations per completion) do not depend on it; absolute rates are
multiplied back by it when reported as Azure figures.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from shared.storage.ports import Storage


@dataclass(frozen=True)
class AzureModel:
    """Latencies (seconds) of one operation and throughput targets (operations/s) of Azure Storage
    in one region, for a standard general-purpose v2 account (sources in docs/capacity.md)."""

    queue_messages_per_s: float = 2000.0
    """Per queue: messages sent, received or deleted."""
    account_requests_per_s: float = 20000.0
    """Per storage account: every request."""
    blob_requests_per_s: float = 500.0
    """Per single blob (a state blob, a lease sentinel)."""
    table_partition_entities_per_s: float = 2000.0
    """Per table partition (the index keeps every row in one partition)."""
    latency_s: dict[str, float] = field(
        default_factory=lambda: {
            "queue.send": 0.008,
            "queue.receive": 0.010,
            "queue.delete": 0.006,
            "queue.extend": 0.008,
            "queue.approximate_count": 0.006,
            "queue.ensure": 0.010,
            "blob.read": 0.008,
            "blob.write": 0.012,
            "blob.head": 0.005,
            "lease": 0.006,
            "table.point": 0.008,
            "table.query": 0.020,
        }
    )
    slowdown: float = 1.0
    """Run the model this many times slower (latencies x slowdown, rates / slowdown)."""


_KIND = {
    "read_definition": "blob.read", "read_state": "blob.read", "get": "blob.read",
    "create_definition": "blob.write", "create_state": "blob.write", "write_state": "blob.write",
    "put": "blob.write", "create_if_absent": "blob.write", "state_metadata": "blob.head",
    "append": "blob.write", "write_definition": "blob.write", "definition_properties": "blob.head",
    "state_properties": "blob.head",
    "acquire": "lease", "renew": "lease", "release": "lease", "break_lease": "lease",
    "is_held": "lease", "send": "queue.send", "receive": "queue.receive",
    "delete": "queue.delete", "extend": "queue.extend",
    "approximate_count": "queue.approximate_count", "ensure": "queue.ensure",
    "create": "table.point", "create_many": "table.point", "project": "table.point",
    "project_many": "table.point",
    "request_cancel": "table.point",
    "clear_cancel": "table.point", "list": "table.query", "active": "table.query",
}  # fmt: skip
"""Port method -> the operation kind whose latency it takes (blob, queue and table methods)."""


class RateLimit:
    """Admits one operation every 1/rate seconds on average, with bursts of up to a tenth of a
    second's worth (Azure measures its targets over time, not per millisecond): callers wait for
    their slot."""

    def __init__(self, rate_per_s: float) -> None:
        self.interval = 1.0 / rate_per_s
        self.burst_s = max(8 * self.interval, 0.1)
        self.next_free = 0.0

    def reserve(self, now: float, count: int = 1) -> float:
        """Book ``count`` slots; return how long the caller must wait for the last of them."""
        start = max(self.next_free, now - self.burst_s)
        self.next_free = start + count * self.interval
        return max(0.0, self.next_free - self.interval - now)


@dataclass
class ModelStats:
    """What the model saw: operations by port method, and how often a limit made a call wait."""

    calls: Counter[str] = field(default_factory=Counter)
    throttled: Counter[str] = field(default_factory=Counter)

    def total(self) -> int:
        return sum(self.calls.values())


class StorageModel:
    """The shared latency and rate-limit state of one modelled storage account."""

    def __init__(
        self, model: AzureModel | None = None, queue_kind: Callable[[str], str] | None = None
    ) -> None:
        self.model = model or AzureModel()
        self.queue_kind = queue_kind or (lambda _name: "queue")
        """Azure queue name -> the label its calls are counted under (``ResourceNames.queue_kind``
        tells event queues from task queues)."""
        self.stats = ModelStats()
        self._limits: dict[str, RateLimit] = {}

    def _limit(self, key: str, rate: float) -> RateLimit:
        limit = self._limits.get(key)
        if limit is None:
            limit = self._limits[key] = RateLimit(rate / self.model.slowdown)
        return limit

    async def charge(self, label: str, kind: str, scopes: list[tuple[str, float]]) -> None:
        """Wait for ``kind``'s latency and for a slot in the account and in each scope."""
        m = self.model
        self.stats.calls[label] += 1
        now = time.monotonic()
        wait = self._limit("account", m.account_requests_per_s).reserve(now)
        for key, rate in scopes:
            wait = max(wait, self._limit(key, rate).reserve(now))
        if wait > 0:
            self.stats.throttled[label] += 1
        await asyncio.sleep(wait + m.latency_s[kind] * m.slowdown)

    async def charge_messages(self, queue: str, count: int) -> None:
        """Extra queue slots for a receive that returned ``count`` messages (beyond the first)."""
        if count > 1:
            rate = self.model.queue_messages_per_s
            wait = self._limit(f"queue:{queue}", rate).reserve(time.monotonic(), count - 1)
            if wait > 0:
                await asyncio.sleep(wait)


def _scopes(
    model: AzureModel, port: str, method: str, args: tuple[Any, ...]
) -> list[tuple[str, float]]:
    if port == "queue":
        return []  # filled in by the queue proxy, which knows its name
    if port == "index":
        return [("table:index", model.table_partition_entities_per_s)]
    if port in ("workflows", "outputs") and args and isinstance(args[0], str):
        return [(f"blob:{port}/{args[0]}", model.blob_requests_per_s)]
    return []


class _Modelled:
    """A port whose coroutine methods go through the model first."""

    def __init__(
        self,
        target: Any,
        model: StorageModel,
        port: str,
        scope: str | None = None,
        label: str | None = None,
    ):
        self._target = target
        self._model = model
        self._port = port
        self._scope = scope
        self._label = label or port

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if self._port == "queues" and name == "get":
            return lambda queue_name: _queue(attr(queue_name), self._model)
        if not inspect.iscoroutinefunction(attr):
            return attr
        kind = _KIND.get(name, "blob.read")
        if self._port in ("lease", "registry", "schedules"):
            kind = "lease" if self._port == "lease" else "table.point"
        label = f"{self._label}.{name}"
        return _wrap(self, attr, label, kind)


def _wrap(
    proxy: _Modelled, fn: Callable[..., Awaitable[Any]], label: str, kind: str
) -> Callable[..., Awaitable[Any]]:
    model = proxy._model

    async def call(*args: Any, **kwargs: Any) -> Any:
        scopes = _scopes(model.model, proxy._port, label, args)
        if proxy._scope is not None:
            rate = (
                model.model.blob_requests_per_s
                if proxy._port == "lease"
                else model.model.queue_messages_per_s
            )
            scopes.append((proxy._scope, rate))
        await model.charge(label, kind, scopes)
        result = await fn(*args, **kwargs)
        if kind == "queue.receive" and isinstance(result, list):
            await model.charge_messages(proxy._target.name, len(result))
        return result

    return call


def _queue(target: Any, model: StorageModel) -> _Modelled:
    return _Modelled(
        target, model, "queue", scope=f"queue:{target.name}", label=model.queue_kind(target.name)
    )


@dataclass(frozen=True)
class ModelledStorage(Storage):
    """``base`` with every port call paying Azure's latency and limits (``model``)."""

    base: Storage = field(kw_only=True)
    model: StorageModel = field(kw_only=True, hash=False, compare=False)

    def for_partition(self, partition: int) -> ModelledStorage:
        if partition == self.partition:
            return self
        return modelled(self.base.for_partition(partition), self.model)


def modelled(base: Storage, model: StorageModel) -> ModelledStorage:
    """``base`` (typically ``memory_storage()``) behind ``model``; share ``model`` between the
    views and instances that share one storage account."""
    lease_scope = f"lease:{base.partition}"
    return ModelledStorage(
        workflows=_Modelled(base.workflows, model, "workflows"),
        outputs=_Modelled(base.outputs, model, "outputs"),
        deadletters=_Modelled(base.deadletters, model, "deadletters"),
        lease=_Modelled(base.lease, model, "lease", scope=lease_scope),
        queues=_Modelled(base.queues, model, "queues"),
        index=_Modelled(base.index, model, "index"),
        registry=_Modelled(base.registry, model, "registry"),
        cache=_Modelled(base.cache, model, "cache"),
        schedules=_Modelled(base.schedules, model, "schedules"),
        event_queue=_queue(base.event_queue, model),
        event_poison_queue=_queue(base.event_poison_queue, model),
        partition=base.partition,
        base=base,
        model=model,
    )


__all__ = ["AzureModel", "ModelStats", "ModelledStorage", "RateLimit", "StorageModel", "modelled"]
