"""Lease hand-over between two live coordinator processes on Azurite, mid-run: the holder of both
partitions is killed (SIGKILL, no goodbye), the standby takes both leases within a lease period,
and every workflow completes with nothing lost and no attempt run twice."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.settings import Settings
from shared.states import WorkflowStatus
from shared.storage.factory import ensure_resources, open_storage
from tests.coordinator.helpers import fan, load

pytestmark = pytest.mark.azurite

LEASE_S = 15


async def start(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "shared.coordinator", "--wait-for-lease", "--sweep-every", "1",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def test_standby_process_takes_over_a_killed_holders_partitions(
    storage_env: dict[str, str],
) -> None:
    env = {
        **os.environ,
        **storage_env,
        "DAGQ_PARTITIONS": "2",
        "DAGQ_LEASE_S": str(LEASE_S),
        "DAGQ_EVENT_VISIBILITY_S": "10",
    }  # fmt: skip  (events the dead one held come back)
    settings = Settings.model_validate(env)
    wf = fan(40)
    ids = ["hand0", "hand1", "hand4", "hand5"]  # two in each partition
    async with open_storage(settings) as storage:
        await ensure_resources(storage, 2)
        views = [storage.for_partition(p) for p in (0, 1)]
        first = await start(env)
        second: asyncio.subprocess.Process | None = None
        worker = SyntheticWorker(
            storage, settings.names, ["cpu"], {"*": Behavior(duration_s=0.05)}, concurrency=8
        )
        halfway = asyncio.Event()
        worker.on_event_sent = lambda _key: (
            halfway.set() if sum(worker.executions.values()) >= 40 else None
        )
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        try:
            deadline = time.monotonic() + 30
            while not all([await v.lease.is_held() for v in views]):  # the first takes both
                assert time.monotonic() < deadline, "the first coordinator took no lease"
                await asyncio.sleep(0.1)
            second = await start(env)  # a hot standby for both partitions
            for wid in ids:
                await service.submit(storage, wf, now=time.time(), workflow_id=wid, partitions=2)
            await asyncio.wait_for(halfway.wait(), timeout=60)  # mid-run
            first.send_signal(signal.SIGKILL)
            await first.wait()
            deadline = time.monotonic() + 4 * LEASE_S
            for wid in ids:
                while not (await load(storage, wf, wid)).status.is_terminal:
                    assert time.monotonic() < deadline, f"{wid} did not finish after the kill"
                    await asyncio.sleep(0.2)
            for wid in ids:
                assert (await load(storage, wf, wid)).status is WorkflowStatus.COMPLETED
            assert all([await v.lease.is_held() for v in views])  # the standby holds both
            assert second.returncode is None
            assert max(worker.executions.values()) == 1, "an attempt ran twice"
            assert sum(worker.executions.values()) == len(ids) * len(wf.tasks)
            rows = (await storage.index.list(limit=10)).rows
            assert sorted(row.partition for row in rows) == [0, 0, 1, 1]
        finally:
            stop.set()
            await running
            for proc in (first, second):
                if proc is not None and proc.returncode is None:
                    proc.terminate()
                    await proc.wait()
