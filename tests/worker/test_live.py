"""Live logs, progress and GPU use of a running task, seen in storage before the task ends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.errors import NotFoundError
from shared.messages import TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.factory import AzureStorage
from shared.storage.registry import GpuUse, WorkerRecord
from tests.worker.agents import create_workflow, read_events, running_agent, send_task
from worker_agent.config import WorkerSettings

FAKE_NVIDIA_SMI = """#!/bin/sh
echo "0, 87, 30000, 81920"
echo "1, [N/A], 1, 81920"
echo "2, 3, 512, 81920"
"""

TASK = (
    'for i in 1 2 3 4 5 6 7 8; do echo "line $i"; '
    'echo "{\\"progress\\": 0.$i, \\"epoch\\": $i, \\"loss\\": 0.5, \\"<b>\\": 1}" '
    '>> "$DAGQ_PROGRESS"; '
    "sleep 0.4; done"
)


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_NVIDIA_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


async def test_the_log_grows_in_storage_and_progress_and_gpus_reach_the_registry(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Callable[..., WorkerSettings],
    fake_gpus: None,
) -> None:
    settings = worker_settings(live_s=0.2, registry_s=0.5)  # progress rides the regular beat
    await create_workflow(azure_storage, "wf-live")
    blob = ResourceNames.log_blob("wf-live", "chatty", 1)
    sizes: list[int] = []
    records: list[WorkerRecord] = []
    async with running_agent(settings, azure_storage):
        await send_task(azure_storage, names, "wf-live", "chatty", TASK)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            len(set(sizes)) >= 3 and records and records[0].tasks[0].progress
        ):
            with contextlib.suppress(NotFoundError):
                sizes.append((await azure_storage.outputs.read_range(blob, 0, 1 << 20))[1])
            found = await azure_storage.registry.workers()
            # progress and the GPU sample may reach the registry in different heartbeats
            records[:] = [r for r in found if r.tasks and r.tasks[0].progress and r.gpus]
            await asyncio.sleep(0.1)
        [event] = [e for e in await read_events(azure_storage, 1) if e.kind == "completed"]
    assert len({s for s in sizes if s > 0}) >= 2, f"the log did not grow while running: {sizes}"
    [record] = records
    progress = record.tasks[0].progress
    assert progress is not None
    assert progress.progress is not None
    assert 0.1 <= progress.progress <= 0.8
    assert set(progress.metrics) == {"epoch", "loss"}  # "<b>" is no metric name
    assert record.gpus == [GpuUse(0, 87.0, 30000.0, 81920.0), GpuUse(2, 3.0, 512.0, 81920.0)]
    assert isinstance(event, TaskCompletedEvent)
    assert event.log_blob == blob
    log = (await azure_storage.outputs.get(blob)).decode()
    assert log.splitlines() == [f"line {i}" for i in range(1, 9)]


async def test_a_huge_integer_in_the_progress_file_neither_stops_live_logs_nor_the_attempt(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Callable[..., WorkerSettings],
) -> None:
    # float() of a 400-digit integer raises OverflowError: it stopped the live loop, and the
    # attempt was released and rerun instead of reported.
    huge = "9" * 400
    cmd = (
        f'echo \'{{"progress": {huge}, "loss": {huge}}}\' >> "$DAGQ_PROGRESS"; echo before; '
        'sleep 0.6; echo \'{"progress": 0.5}\' >> "$DAGQ_PROGRESS"; sleep 0.6; echo after'
    )
    await create_workflow(azure_storage, "wf-huge")
    async with running_agent(worker_settings(live_s=0.2), azure_storage) as agent:
        await send_task(azure_storage, names, "wf-huge", "t", cmd)
        (event,) = await read_events(azure_storage, 1)
        record = agent.presence.record()
    assert isinstance(event, TaskCompletedEvent), event
    assert event.log_blob is not None
    assert await azure_storage.outputs.get(event.log_blob) == b"before\nafter\n"
    assert record.live_errors == 0  # not an error: just not a number
