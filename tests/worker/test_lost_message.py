"""A worker whose message was taken by another worker (visibility ran out) neither reports nor
deletes it. Runs on the in-memory storage fakes, whose clock the test moves on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.subprocess]


async def test_a_lost_message_is_neither_reported_nor_deleted(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    now = [1000.0]
    storage = memory_storage("lost", clock=lambda: now[0])
    await storage.workflows.create_state("wf1", b"{}", {"status": "running"})
    started = tmp_path / "started"
    queue = storage.queues.get(ResourceNames("lost").task_queue("cpu"))
    message = TaskMessage(
        workflow_id="wf1", task="t", attempt=1, queue="cpu", cmd=f"touch {started}; sleep 1.5"
    )
    await queue.send(encode(message))
    settings = worker_settings(visibility_s=5, heartbeat_s=0.2)
    agent = Agent(settings, storage, ResourceNames("lost"))
    run = asyncio.create_task(agent.run())
    for _ in range(200):
        if started.exists():
            break
        await asyncio.sleep(0.02)
    # The agent stalls past its visibility timeout and another worker receives the message.
    now[0] += 60
    (other,) = await queue.receive(1, 600)
    for _ in range(200):  # the run ends (sleep 1.5) and the slot is free again
        if not agent.busy and not (tmp_path / "work" / "attempts" / "wf1" / "t" / "1").exists():
            break
        await asyncio.sleep(0.05)
    agent.shutdown("test over", 0)
    await asyncio.wait_for(run, timeout=10)
    assert await storage.event_queue.approximate_count() == 0  # the new holder reports, not us
    assert await queue.delete(other)  # still there, under the other worker's receipt
