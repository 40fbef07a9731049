"""Slots and polling: GPU assignment under concurrency, queue priority, idle exit, the CLI."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable

import pytest

from shared.messages import TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import REPO_ROOT, create_workflow, read_events, running_agent, send_task
from worker_agent.agent import Agent
from worker_agent.cli import main
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]

REPORT_GPUS = (
    "python3 -c 'import json, os, time; start = time.time(); time.sleep(0.4); "
    'json.dump({"gpus": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, '
    '"end": time.time()}, open(os.environ["DAGQ_OUTPUT"], "w"))\''
)


async def test_each_slot_gets_its_own_gpus_and_running_tasks_never_share_them(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    for i in range(6):
        # The task env cannot take GPUs it was not given.
        await send_task(
            azure_storage,
            names,
            "wf1",
            f"t{i}",
            REPORT_GPUS,
            env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        )
    settings = worker_settings(gpus="0,1,2,3", gpus_per_task=2)
    async with running_agent(settings, azure_storage) as agent:
        assert agent.slot_count == 2
        events = await read_events(azure_storage, 6)
    outputs = []
    for event in events:
        assert isinstance(event, TaskCompletedEvent)
        assert event.output is not None
        assert isinstance(event.output.inline, dict)
        outputs.append(event.output.inline)
    assert {o["gpus"] for o in outputs} == {"0,1", "2,3"}
    for a in outputs:
        for b in outputs:
            if a is not b and a["gpus"] == b["gpus"]:
                overlap = min(a["end"], b["end"]) - max(a["start"], b["start"])  # type: ignore[operator]
                assert overlap <= 0, f"two tasks shared GPUs {a['gpus']} at once"
    # The two slots ran side by side at some point.
    assert any(
        min(a["end"], b["end"]) > max(a["start"], b["start"])  # type: ignore[operator]
        for a in outputs
        for b in outputs
        if a["gpus"] != b["gpus"]
    )


async def test_queues_are_polled_in_priority_order(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    for i in range(3):
        await send_task(azure_storage, names, "wf1", f"low{i}", "true", queue="low")
    for i in range(3):
        await send_task(azure_storage, names, "wf1", f"high{i}", "true", queue="high")
    async with running_agent(worker_settings(queues=["high", "low"]), azure_storage):
        events = await read_events(azure_storage, 6)
    order = [e.task for e in events if isinstance(e, TaskCompletedEvent)]
    assert [t[:-1] for t in order] == ["high"] * 3 + ["low"] * 3


async def test_idle_timeout_exits_the_agent(
    azure_storage: AzureStorage, worker_settings: Make
) -> None:
    agent = Agent(worker_settings(idle_timeout_s=0.3), azure_storage, azure_storage.names)
    assert await asyncio.wait_for(agent.run(), timeout=20) == 0
    assert agent.shutdown_reason == "idle timeout"


def test_help_explains_every_option() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "worker_agent", "--help"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    for option in ("--concurrency", "--gpus", "--visibility-s", "--idle-timeout-s", "--work-dir"):
        assert option in result.stdout
    assert "DAGQ_WORKER_CONCURRENCY" in result.stdout
    for name in WorkerSettings.model_fields:  # every option, in docs/worker.md's table too
        if name != "queues":
            option = "--" + name.replace("_", "-")
            assert option in result.stdout
            assert f"`{option}`" in (REPO_ROOT / "docs" / "worker.md").read_text(), option


def test_configuration_errors_exit_2_with_a_clear_message(
    storage_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in storage_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DAGQ_WORKER_QUEUES", raising=False)
    assert main([]) == 2
    assert "no queues to poll" in capsys.readouterr().err
    assert main(["gpu", "--gpus", "0,1", "--concurrency", "3"]) == 2
    assert "--concurrency 3 needs 3 GPUs" in capsys.readouterr().err
    assert main(["gpu", "--visibility-s", "10", "--heartbeat-s", "10"]) == 2
    assert "heartbeat_s (10.0) must be below visibility_s (10)" in capsys.readouterr().err
    assert main(["gpu", "--concurrency", "zero"]) == 2
    assert "concurrency" in capsys.readouterr().err
