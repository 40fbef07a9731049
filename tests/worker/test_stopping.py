"""Stopping tasks: a cancelled workflow (before and while running), SIGTERM to the agent, and a
Scheduled Events preemption notice from a fake metadata server."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.messages import TaskCompletedEvent, TaskFailedEvent, decode_task_message
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.support.processes import alive
from tests.worker.agents import (
    create_workflow,
    drain_events,
    read_events,
    running_agent,
    send_task,
    set_status,
    start_agent,
)
from tests.worker.metadata_service import FakeMetadata, preempt
from tests.worker.waiting import wait_for
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]


def group_task(tmp_path: Path) -> tuple[str, Path, Path]:
    """A command whose grandchild ignores SIGTERM (only SIGKILL stops it) and records its pid."""
    pid_file = tmp_path / "grandchild.pid"
    started = tmp_path / "started"
    cmd = f"(trap '' TERM; exec sleep 60) & echo $! > {pid_file}; touch {started}; wait; sleep 60"
    return cmd, pid_file, started


async def test_cancel_stops_the_whole_process_group_and_reports_cancelled(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    await create_workflow(azure_storage, "wf1")
    cmd, pid_file, started = group_task(tmp_path)
    await send_task(azure_storage, names, "wf1", "train", cmd)
    async with running_agent(worker_settings(kill_grace_s=0.5), azure_storage):
        await wait_for(started.exists)
        grandchild = int(pid_file.read_text())
        assert alive(grandchild)
        await set_status(azure_storage, "wf1", "cancelling")
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "cancelled"
    assert event.log_blob is not None
    await wait_for(lambda: not alive(grandchild), timeout_s=5)
    assert await azure_storage.queues.get(names.task_queue("cpu")).approximate_count() == 0


async def test_task_of_cancelled_workflow_is_skipped_and_reported(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    # A workflow with no state blob at all is another case since the submit sends roots before
    # it creates the state: a young message waits for it, an old one is an orphan, dead-lettered
    # and never run (tests/worker/test_missing_state.py).
    marker = tmp_path / "ran"
    await create_workflow(azure_storage, "wf1", status="cancelled")
    await send_task(azure_storage, names, "wf1", "a", f"touch {marker}")
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert (event.workflow_id, event.kind, getattr(event, "reason", None)) == (
        "wf1",
        "failed",
        "cancelled",
    )
    assert not marker.exists()


async def test_sigterm_lets_a_short_task_finish_then_exits(
    azure_storage: AzureStorage,
    names: ResourceNames,
    storage_env: dict[str, str],
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", f"touch {started}; sleep 1")
    agent = await start_agent(
        storage_env, tmp_path / "w", "cpu", log=tmp_path / "agent.log",
        DAGQ_WORKER_SHUTDOWN_GRACE_S="20",
    )  # fmt: skip
    await wait_for(started.exists)
    agent.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(agent.wait(), timeout=20) == 0
    (event,) = await drain_events(azure_storage)
    assert isinstance(event, TaskCompletedEvent)


# -- preemption ----------------------------------------------------------------------------------


@pytest.fixture
def metadata() -> Iterator[FakeMetadata]:
    # The first request is answered later than the 2 s the watcher used to wait: on a fresh VM
    # that switched the watcher off for good and every notice was missed.
    fake = FakeMetadata(first_delay_s=2.5)
    yield fake
    fake.close()


@pytest.mark.slow
async def test_preemption_notice_releases_the_running_task_without_reporting(
    azure_storage: AzureStorage,
    names: ResourceNames,
    storage_env: dict[str, str],
    tmp_path: Path,
    metadata: FakeMetadata,
) -> None:
    await create_workflow(azure_storage, "wf1")
    cmd, pid_file, started = group_task(tmp_path)
    await send_task(azure_storage, names, "wf1", "train", cmd)
    agent = await start_agent(
        storage_env, tmp_path / "w", "cpu", log=tmp_path / "agent.log",
        DAGQ_WORKER_SCHEDULED_EVENTS="true", DAGQ_WORKER_METADATA_URL=metadata.url,
        DAGQ_WORKER_METADATA_POLL_S="0.1",
        DAGQ_WORKER_SHUTDOWN_GRACE_S="0.2", DAGQ_WORKER_KILL_GRACE_S="0.5",
        DAGQ_WORKER_VISIBILITY_S="60", DAGQ_WORKER_HEARTBEAT_S="20",
    )  # fmt: skip
    try:
        await wait_for(started.exists)
        grandchild = int(pid_file.read_text())
        task_alive_at_ack: list[bool] = []
        metadata.on_ack = lambda: task_alive_at_ack.append(alive(grandchild))
        metadata.events.append(preempt("another-vm"))  # not ours: ignored
        await asyncio.sleep(0.5)
        assert agent.returncode is None
        metadata.events.append(preempt("vm-7"))
        assert await asyncio.wait_for(agent.wait(), timeout=20) == 0
    finally:
        if agent.returncode is None:
            agent.kill()
            await agent.wait()
    assert not alive(grandchild)
    assert all(r["metadata"] == "true" for r in metadata.requests)
    # The event was acknowledged once, after the task was stopped and handed back: Azure may
    # take the VM now instead of at NotBefore.
    assert metadata.acks == [{"StartRequests": [{"EventId": "evt-vm-7"}]}]
    assert task_alive_at_ack == [False]
    # Not a failed attempt: nothing reported, and the message is visible again at once (its
    # 60 s visibility timeout was cut short), ready for another worker.
    assert await drain_events(azure_storage) == []
    queue = azure_storage.queues.get(names.task_queue("cpu"))
    (again,) = await queue.receive(1, 5)
    assert decode_task_message(again.text).task == "train"
    assert again.dequeue_count == 2
