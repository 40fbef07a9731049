"""At-least-once delivery from the worker's side: heartbeats, duplicate dispatch, a worker killed
mid-task. Each task appends a line to a marker file outside its work dir to count its runs."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.messages import TaskCompletedEvent, TaskMessage, encode
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import (
    create_workflow,
    drain_events,
    read_events,
    running_agent,
    send_task,
    start_agent,
)
from tests.worker.waiting import wait_for
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]


def runs(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


@pytest.mark.slow
async def test_heartbeat_keeps_a_long_task_from_being_redelivered(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    marker = tmp_path / "runs"
    await create_workflow(azure_storage, "wf1")
    # Runs 3x longer than the visibility timeout; a second agent polls the same queue all along.
    await send_task(azure_storage, names, "wf1", "long", f"echo run >> {marker}; sleep 5")
    fast = {"visibility_s": 2, "heartbeat_s": 0.5}
    async with (
        running_agent(worker_settings(worker_id="a", **fast), azure_storage),
        running_agent(
            worker_settings(worker_id="b", work_dir=tmp_path / "b", **fast), azure_storage
        ),
    ):
        (event,) = await read_events(azure_storage, 1, timeout_s=30)
        await asyncio.sleep(1.0)  # a redelivery would have started by now
    assert isinstance(event, TaskCompletedEvent)
    assert runs(marker) == ["run"]
    assert await drain_events(azure_storage) == []


async def test_duplicate_dispatch_of_one_attempt_runs_once(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    marker = tmp_path / "runs"
    await create_workflow(azure_storage, "wf1")
    message = TaskMessage(
        workflow_id="wf1", task="t", attempt=1, queue="cpu", cmd=f"echo run >> {marker}; sleep 1"
    )
    queue = azure_storage.queues.get(names.task_queue("cpu"))
    await queue.send(encode(message))
    await queue.send(encode(message))  # the same attempt dispatched twice (e.g. ready-repair)
    async with running_agent(worker_settings(concurrency=2), azure_storage):
        (event,) = await read_events(azure_storage, 1)
        for _ in range(40):  # both messages handled: the queue is empty
            if await queue.approximate_count() == 0:
                break
            await asyncio.sleep(0.1)
    assert isinstance(event, TaskCompletedEvent)
    assert runs(marker) == ["run"]
    assert await queue.approximate_count() == 0
    assert await drain_events(azure_storage) == []


@pytest.mark.slow
async def test_agent_killed_mid_task_another_agent_completes_it(
    azure_storage: AzureStorage,
    names: ResourceNames,
    storage_env: dict[str, str],
    tmp_path: Path,
) -> None:
    marker = tmp_path / "runs"
    await create_workflow(azure_storage, "wf1")
    await send_task(
        azure_storage, names, "wf1", "t", f'echo "$DAGQ_ATTEMPT" >> {marker}; sleep 2; echo ok'
    )
    fast = {"DAGQ_WORKER_VISIBILITY_S": "2", "DAGQ_WORKER_HEARTBEAT_S": "0.5"}
    first = await start_agent(
        storage_env, tmp_path / "a", "cpu", log=tmp_path / "a.log", DAGQ_WORKER_WORKER_ID="a",
        **fast,
    )  # fmt: skip
    try:
        await wait_for(lambda: len(runs(marker)) == 1)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    second = await start_agent(
        storage_env, tmp_path / "b", "cpu", log=tmp_path / "b.log", DAGQ_WORKER_WORKER_ID="b",
        **fast,
    )  # fmt: skip
    try:
        events = await read_events(azure_storage, 1, timeout_s=30)
    finally:
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), timeout=20) == 0
    (event,) = [e for e in events if e.kind == "completed"]
    assert isinstance(event, TaskCompletedEvent)
    assert event.worker == "b"
    assert runs(marker) == ["1", "1"]  # the same attempt ran again: redelivery, not a new attempt
    log = await azure_storage.outputs.get(ResourceNames.log_blob("wf1", "t", 1))
    assert log.strip() == b"ok"
    assert await azure_storage.queues.get(names.task_queue("cpu")).approximate_count() == 0
