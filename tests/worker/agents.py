"""Worker agents over the session's Azurite for the worker's tests: workflows to run, task messages
sent, events read back, agents running until drained (fixtures: conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from shared.messages import Event, TaskMessage, encode
from shared.messages.wrappers import events_of
from shared.names import ResourceNames
from shared.storage import AzureStorage
from shared.storage.ports import Queue, Storage
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


async def create_workflow(storage: AzureStorage, workflow_id: str, status: str = "running") -> None:
    """A state blob whose metadata says ``status`` (all a worker reads of it)."""
    await storage.workflows.create_state(workflow_id, b"{}", {"status": status})


async def set_status(storage: AzureStorage, workflow_id: str, status: str) -> None:
    etag = (await storage.workflows.read_state(workflow_id)).etag
    await storage.workflows.write_state(workflow_id, b"{}", etag, {"status": status})


async def send_task(
    storage: AzureStorage,
    names: ResourceNames,
    workflow_id: str,
    task: str,
    cmd: str,
    *,
    queue: str = "cpu",
    attempt: int = 1,
    **fields: Any,
) -> TaskMessage:
    message = TaskMessage(
        workflow_id=workflow_id, task=task, attempt=attempt, queue=queue, cmd=cmd, **fields
    )
    await storage.queues.get(names.task_queue(queue)).send(encode(message))
    return message


async def read_events(
    storage: AzureStorage,
    count: int,
    *,
    timeout_s: float = 20.0,
    kinds: tuple[str, ...] = ("completed", "failed"),
) -> list[Event]:
    """Wait for ``count`` events of ``kinds`` on the event queue (others are collected too but not
    counted); returns all events received, in arrival order."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout_s
    while sum(1 for e in events if e.kind in kinds) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} {kinds} events, got {events}")
        received = await storage.event_queue.receive(32, 30)
        for message in received:
            events += events_of(message.text)
            await storage.event_queue.delete(message)
        if not received:
            await asyncio.sleep(0.1)
    return events


async def drain_events(storage: AzureStorage) -> list[Event]:
    """Whatever events are on the queue now."""
    events: list[Event] = []
    while received := await storage.event_queue.receive(32, 30):
        for message in received:
            events += events_of(message.text)
            await storage.event_queue.delete(message)
    return events


@contextlib.asynccontextmanager
async def running_agent(settings: WorkerSettings, storage: AzureStorage) -> AsyncIterator[Agent]:
    """An in-process agent, shut down (grace 0) when the block ends."""
    agent = Agent(settings, storage, storage.names)
    task = asyncio.create_task(agent.run())
    try:
        yield agent
    finally:
        if not task.done():
            agent.shutdown("test over", 0.0)
        await asyncio.wait_for(task, timeout=30)


async def run_until_drained(
    settings: WorkerSettings, storage: Storage, names: ResourceNames, queue: Queue
) -> None:
    """Run an in-process agent until ``queue`` is empty (at most ~10 s), then shut it down."""
    agent = Agent(settings, storage, names)
    run = asyncio.create_task(agent.run())
    for _ in range(400):
        if not await queue.approximate_count():
            break
        await asyncio.sleep(0.025)
    agent.shutdown("test over", 0)
    await asyncio.wait_for(run, timeout=10)


async def start_agent(
    storage_env: dict[str, str], work_dir: Path, *args: str, log: Path, **env: str
) -> asyncio.subprocess.Process:
    """``python -m worker_agent ARGS`` as a subprocess with fast settings from the environment."""
    full_env = {
        **os.environ,
        **storage_env,
        **{f"DAGQ_WORKER_{k.upper()}": str(v) for k, v in FAST.items()},
        "DAGQ_WORKER_WORK_DIR": str(work_dir),
        "DAGQ_WORKER_LOG_LEVEL": "DEBUG",
        **env,
    }
    handle = log.open("ab")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "worker_agent",
            *args,
            env=full_env,
            cwd=REPO_ROOT,
            stdout=handle,
            stderr=handle,
        )
    finally:
        handle.close()


FAST: dict[str, Any] = {
    "visibility_s": 5,
    "heartbeat_s": 1.0,
    "started_after_s": 30.0,
    "cancel_check_s": 0.3,
    "kill_grace_s": 1.0,
    "shutdown_grace_s": 1.0,
    "idle_timeout_s": 0.0,
    "min_poll_s": 0.05,
    "max_poll_s": 0.2,
    "metadata_url": "",
    "worker_id": "test-worker",
}
"""Worker settings that keep tests short."""
