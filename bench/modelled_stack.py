"""Pieces the partition benchmarks share: a modelled in-memory deployment, workflows staged so
their leaves are running, and Functions-shaped queue-trigger instances.

Not a benchmark itself (``make bench`` runs ``bench_*.py`` only).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace

from shared import codec, engine
from shared.coordinator import Coordinator, CoordinatorOptions
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.deployment import partition_metadata
from shared.engine.projection import index_row
from shared.messages import ActivateEvent, TaskCompletedEvent, encode
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from shared.storage.ports import Storage


def fan(leaves: int, queue: str = "cpu") -> CompiledWorkflow:
    """1 root -> ``leaves`` leaves -> 1 sink."""
    tasks = [TaskDef(name="root", cmd="true", queue=queue)]
    tasks += [TaskDef(name=f"leaf{i:05d}", cmd="true", queue=queue, parents=(0,))
              for i in range(leaves)]  # fmt: skip
    tasks.append(TaskDef(name="sink", cmd="true", queue=queue, parents=tuple(range(1, leaves + 1))))
    return CompiledWorkflow.of("fan", tasks)


async def stage_running_leaves(
    base: MemoryStorage, wf: CompiledWorkflow, wid: str, partition: int
) -> list[str]:
    """Store ``wid`` as the coordinator would have left it with every leaf dispatched (written
    straight to the unmodelled storage), and return the leaves' completion events."""
    now = time.time()
    state = engine.new_state(wf, wid, now)
    engine.apply(wf, state, ActivateEvent(workflow_id=wid), now)
    done = TaskCompletedEvent(workflow_id=wid, task="root", attempt=1, started_at=now,
                              finished_at=now)  # fmt: skip
    engine.apply(wf, state, done, now)
    await base.workflows.create_definition(wid, codec.encode_definition(wf))
    metadata = codec.state_metadata(state) | partition_metadata(partition)
    await base.workflows.create_state(wid, codec.encode_state(state), metadata)
    await base.index.create(replace(index_row(wf, state), partition=partition))
    return [
        encode(
            TaskCompletedEvent(
                workflow_id=wid, task=t.name, attempt=1, started_at=now, finished_at=now
            )
        )
        for t in wf.tasks[1:-1]
    ]


async def queues_empty(base: MemoryStorage, partitions: int) -> bool:
    """Whether every partition's event queue is empty (everything applied and deleted)."""
    counts = [
        await base.for_partition(p).event_queue.approximate_count() for p in range(partitions)
    ]
    return not any(counts)


class FunctionsInstance:
    """One Functions instance of the app, as host.json configures the queue triggers: per
    partition, one invocation at a time (batchSize 1, newBatchThreshold 0), polling back off to
    ``max_poll_s``, the message deleted when the invocation returns."""

    def __init__(
        self,
        storage: Storage,
        names: ResourceNames,
        partitions: int,
        options: CoordinatorOptions,
        keep_lease: bool,
    ) -> None:
        self.views = [storage.for_partition(p) for p in range(partitions)]
        self.coordinators = [
            Coordinator(view, names, options, keep_lease=keep_lease) for view in self.views
        ]

    async def run(self, stop: asyncio.Event, max_poll_s: float = 0.5) -> None:
        await asyncio.gather(*(self._listen(p, stop, max_poll_s) for p in range(len(self.views))))
        await asyncio.gather(*(c.close() for c in self.coordinators))

    async def _listen(self, partition: int, stop: asyncio.Event, max_poll_s: float) -> None:
        queue = self.views[partition].event_queue
        coordinator = self.coordinators[partition]
        delay = 0.1
        while not stop.is_set():
            received = await queue.receive(1, 60)
            if not received:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                delay = min(delay * 2, max_poll_s)
                continue
            delay = 0.1
            message = received[0]
            try:
                await coordinator.handle_trigger_message(
                    message.text, message.id, message.dequeue_count
                )
            except Exception:  # the host retries after visibilityTimeout (5 s)
                await queue.extend(message, 5)
                continue
            await queue.delete(message)
