"""A long task's storage requests grow at the capped cadences (worker_agent/cadence.py) while a
cancel still stops it: a real agent and real task processes on Azurite, with short intervals."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.messages import TaskFailedEvent
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import create_workflow, read_events, running_agent, send_task, set_status
from tests.worker.waiting import wait_for
from worker_agent.cadence import cancel_check_interval, ticks_within
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]


async def test_a_cancel_stops_a_long_task_checked_at_its_capped_interval(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    settings = worker_settings(cancel_check_s=0.1, cancel_check_max_s=0.4, kill_grace_s=0.5)
    await create_workflow(azure_storage, "wf-long")
    started = tmp_path / "started"
    await send_task(azure_storage, names, "wf-long", "train", f"touch {started}; sleep 120")
    async with running_agent(settings, azure_storage) as agent:
        began = time.monotonic()  # before the task starts: its age is at most ``ran``
        await wait_for(started.exists)
        # old enough for the capped interval: 4 x 0.4 s
        since = time.monotonic()
        await wait_for(lambda: time.monotonic() - since > 2.0, timeout_s=10)
        await set_status(azure_storage, "wf-long", "cancelling")
        (event,) = await read_events(azure_storage, 1)  # it stops (else: no event in 20 s)
        ran = time.monotonic() - began
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "cancelled"
    checks = agent.attempts.heads
    assert checks is not None
    # the check before the run, then at most the capped cadence's checks (a fixed 0.1 s one
    # would be 4 times as many by now)
    assert 2 <= checks.heads <= ticks_within(lambda a: cancel_check_interval(settings, a), ran) + 2


async def test_tasks_of_one_workflow_on_one_worker_share_their_cancel_checks(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    settings = worker_settings(
        concurrency=4, cancel_check_s=0.2, cancel_check_max_s=0.2, kill_grace_s=0.5
    )
    await create_workflow(azure_storage, "wf-fan")
    for i in range(4):
        marker = tmp_path / f"started-{i}"
        await send_task(azure_storage, names, "wf-fan", f"shard{i}", f"touch {marker}; sleep 120")
    async with running_agent(settings, azure_storage) as agent:
        await wait_for(lambda: all((tmp_path / f"started-{i}").exists() for i in range(4)))
        began = time.monotonic()
        await wait_for(lambda: time.monotonic() - began > 2.0, timeout_s=10)
        await set_status(azure_storage, "wf-fan", "cancelling")
        events = await read_events(azure_storage, 4)
        ran = time.monotonic() - began
    assert (
        sorted(getattr(e, "reason", None) for e in events if e.kind == "failed")
        == ["cancelled"] * 4
    )
    checks = agent.attempts.heads
    assert checks is not None
    # four tasks, each checking every 0.2 s: alone they would make 4 HEADs per interval; shared
    # answers at most half an interval old make about two per interval (+ the starts' slack)
    alone = 4 * ticks_within(lambda a: cancel_check_interval(settings, a), ran)
    assert checks.heads <= alone * 3 // 4 + 4  # (+ at most one check each before the run)
