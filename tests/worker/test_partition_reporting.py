"""A worker reports an attempt to the event queue of the partition its task message names."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from shared.messages import TaskMessage, encode
from shared.messages.wrappers import events_of
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.subprocess]


async def test_events_go_to_the_partition_of_the_task_message(
    worker_settings: Callable[..., WorkerSettings],
) -> None:
    storage = memory_storage("part")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running"})
    queue = storage.queues.get(ResourceNames("part").task_queue("cpu"))
    message = TaskMessage(
        workflow_id="wf1", task="t", attempt=1, queue="cpu", cmd="true", partition=5
    )
    await queue.send(encode(message))
    agent = Agent(worker_settings(), storage, ResourceNames("part"))
    run = asyncio.create_task(agent.run())
    five = storage.for_partition(5).event_queue
    for _ in range(400):
        if await five.approximate_count():
            break
        await asyncio.sleep(0.025)
    agent.shutdown("test over", 0)
    await asyncio.wait_for(run, timeout=10)
    (received,) = await five.receive(32, 30)
    assert [e.kind for e in events_of(received.text)] == ["completed"]
    assert await storage.event_queue.approximate_count() == 0
