"""The Flex Consumption scale controller, modelled for the partition benchmark.

Target-based scaling for Storage queues (learn.microsoft.com, "Target-based scaling"): the platform
aims at ``batchSize`` executions per instance, so a function whose queue holds N messages wants
``ceil(N / batchSize)`` instances, never more than ``maximumInstanceCount`` ("Flex Consumption
plan": the bound is per function group; each coordinator partition's trigger scales on its own).
The controller re-evaluates every ``cadence_s`` and moves straight to the target (scale-in drops
the instances with no invocation in flight). Flex bills on-demand instances for the time they
execute, so the billed figure here is the sum of invocation durations, including the time a
non-holder waits for the lease (``lease_wait_s``) before it bounces its event.

Not a benchmark itself (``make bench`` runs ``bench_*.py`` only).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass, field

from shared.coordinator import Coordinator, CoordinatorOptions
from shared.names import ResourceNames
from shared.storage.ports import Storage

BATCH_SIZE = 1
"""host.json's queues.batchSize (one invocation per instance and partition)."""


@dataclass
class Billing:
    """What the platform would bill and count for one function."""

    executing_s: float = 0.0
    invocations: int = 0
    peak_instances: int = 0
    instance_starts: int = 0


@dataclass
class _Instance:
    coordinator: Coordinator
    task: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    busy: bool = False


class PartitionFunction:
    """One partition's queue-trigger function on Flex Consumption: 0..max instances, each polling
    the partition's event queue like the host (one message at a time, backing off to 0.5 s)."""

    def __init__(
        self,
        storage: Storage,
        names: ResourceNames,
        partition: int,
        options: CoordinatorOptions,
        max_instances: int,
    ) -> None:
        self.view = storage.for_partition(partition)
        self.names = names
        self.options = options
        self.max_instances = max_instances
        self.instances: list[_Instance] = []
        self.billing = Billing()
        self._retired_bounces = 0

    @property
    def bounces(self) -> int:
        """Events handed back by every instance this function ever had."""
        return self._retired_bounces + sum(i.coordinator.bounces for i in self.instances)

    async def scale(self) -> None:
        """One scale decision: instances = ceil(queue length / batchSize), bounded."""
        length = await self.view.event_queue.approximate_count()
        target = min(self.max_instances, math.ceil(length / BATCH_SIZE))
        while len(self.instances) < target:
            instance = _Instance(Coordinator(self.view, self.names, self.options, keep_lease=True))
            instance.task = asyncio.create_task(self._listen(instance))
            self.instances.append(instance)
            self.billing.instance_starts += 1
        for instance in [i for i in self.instances if not i.busy][: len(self.instances) - target]:
            await self._retire(instance)
        self.billing.peak_instances = max(self.billing.peak_instances, len(self.instances))

    async def _retire(self, instance: _Instance) -> None:
        self.instances.remove(instance)
        instance.stop.set()
        if instance.task is not None:
            await instance.task
        await instance.coordinator.close()
        self._retired_bounces += instance.coordinator.bounces

    async def close(self) -> None:
        """Stop every instance."""
        for instance in list(self.instances):
            await self._retire(instance)

    async def _listen(self, instance: _Instance) -> None:
        queue = self.view.event_queue
        delay = 0.1
        while not instance.stop.is_set():
            received = await queue.receive(1, 60)
            if not received:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(instance.stop.wait(), timeout=delay)
                delay = min(delay * 2, 0.5)
                continue
            delay = 0.1
            message = received[0]
            instance.busy = True
            start = time.perf_counter()
            try:
                await instance.coordinator.handle_trigger_message(
                    message.text, message.id, message.dequeue_count
                )
            except Exception:  # the host retries after visibilityTimeout (5 s)
                await queue.extend(message, 5)
                continue
            finally:
                self.billing.executing_s += time.perf_counter() - start
                self.billing.invocations += 1
                instance.busy = False
            await queue.delete(message)


async def run_controller(
    functions: list[PartitionFunction], stop: asyncio.Event, cadence_s: float
) -> None:
    """Scale every function every ``cadence_s`` until ``stop``; then stop every instance."""
    while not stop.is_set():
        for function in functions:
            await function.scale()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=cadence_s)
    for function in functions:
        await function.close()
