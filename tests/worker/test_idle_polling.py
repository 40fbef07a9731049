"""Idle polling: only one idle slot (the scout) polls, so an idle worker's request rate does not
grow with its slots; a burst is still picked up by every free slot. In-memory storage, real
subprocesses for the tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.storage.memory import MemoryQueue, memory_storage
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.subprocess]


class ReceiveProbe:
    """Counts receives on one queue and the most that were in flight at once."""

    def __init__(self, queue: MemoryQueue) -> None:
        self.calls = 0
        self.in_flight = 0
        self.most_in_flight = 0
        real = queue.receive

        async def receive(max_messages: int, visibility_s: int) -> Any:
            self.calls += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await asyncio.sleep(0.005)  # a storage round trip
                return await real(max_messages, visibility_s)
            finally:
                self.in_flight -= 1

        queue.receive = receive  # type: ignore[method-assign]


async def test_idle_slots_poll_one_at_a_time_and_a_burst_fills_every_slot(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    names = ResourceNames("idle")
    storage = memory_storage("idle")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running"})
    queue = storage.queues.get(names.task_queue("cpu"))
    probe = ReceiveProbe(queue)
    agent = Agent(worker_settings(concurrency=4, max_poll_s=0.05), storage, names)
    run = asyncio.create_task(agent.run())
    await asyncio.sleep(0.2)  # every slot has looked once and found nothing
    probe.calls = probe.most_in_flight = 0
    await asyncio.sleep(0.5)  # idle: four slots, one scout
    assert probe.calls > 3
    assert probe.most_in_flight == 1
    marks = [tmp_path / f"ran{i}" for i in range(4)]
    for i, mark in enumerate(marks):
        # Each task waits until all four run at once (or gives up after 5 s and fails).
        others = " && ".join(f"test -e {m}" for m in marks)
        cmd = f"touch {mark}; for _ in $(seq 100); do {others} && exit 0; sleep 0.05; done; exit 1"
        message = TaskMessage(workflow_id="wf1", task=f"t{i}", attempt=1, queue="cpu", cmd=cmd)
        await queue.send(encode(message))
    for _ in range(400):
        if await storage.event_queue.approximate_count() == 4:
            break
        await asyncio.sleep(0.025)
    agent.shutdown("test over", 0)
    await asyncio.wait_for(run, timeout=10)
    kinds = [m.text for m in await storage.event_queue.receive(32, 30)]
    assert len(kinds) == 4
    assert all('"completed"' in text for text in kinds)
