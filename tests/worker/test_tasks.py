"""One in-process agent on Azurite running real subprocesses: what a task sees, what it reports."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.messages import (
    INLINE_OUTPUT_BYTES,
    OutputRef,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
)
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import (
    create_workflow,
    drain_events,
    read_events,
    running_agent,
    send_task,
)
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]


async def test_success_reports_completion_with_inline_output_and_log(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(
        azure_storage,
        names,
        "wf1",
        "prep",
        'echo "hello from $DAGQ_TASK"; '
        'printf \'{"wf":"%s","attempt":%s}\' "$DAGQ_WORKFLOW_ID" "$DAGQ_ATTEMPT" > "$DAGQ_OUTPUT"',
        attempt=2,
    )
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent)
    assert (event.workflow_id, event.task, event.attempt) == ("wf1", "prep", 2)
    assert event.worker == "test-worker"
    assert event.output == OutputRef(inline={"wf": "wf1", "attempt": 2}, size=24)
    assert event.started_at <= event.finished_at
    assert event.log_blob == ResourceNames.log_blob("wf1", "prep", 2)
    assert b"hello from prep" in await azure_storage.outputs.get(event.log_blob)
    # The message was deleted after the report: nothing is left to redeliver.
    assert await azure_storage.queues.get(names.task_queue("cpu")).approximate_count() == 0


async def test_nonzero_exit_reports_failure_with_stderr_tail(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(
        azure_storage, names, "wf1", "bad", "echo out; echo 'boom: disk full' >&2; exit 3"
    )
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "exit"
    assert event.exit_code == 3
    assert event.error == "boom: disk full"
    assert event.log_blob is not None
    log = await azure_storage.outputs.get(event.log_blob)
    assert b"out\n" in log
    assert b"boom: disk full" in log


async def test_large_output_is_uploaded_and_referenced(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    big = INLINE_OUTPUT_BYTES * 2
    await send_task(
        azure_storage,
        names,
        "wf1",
        "big",
        "python3 -c 'import json, os; "
        f'json.dump({{"x": "a" * {big}}}, open(os.environ["DAGQ_OUTPUT"], "w"))\'',
    )
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent)
    assert event.output is not None
    assert event.output.inline is None
    assert event.output.blob == ResourceNames.output_blob("wf1", "big", 1)
    stored = json.loads(await azure_storage.outputs.get(event.output.blob))
    assert stored == {"x": "a" * big}
    assert event.output.size > big


async def test_invalid_json_output_fails_the_attempt(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", "echo '{not json' > \"$DAGQ_OUTPUT\"")
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "error"
    assert event.exit_code == 0
    assert "$DAGQ_OUTPUT is not valid JSON" in event.error


async def test_upstream_outputs_inline_and_from_blobs_are_visible(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    big_blob = ResourceNames.output_blob("wf1", "big", 1)
    await azure_storage.outputs.put(big_blob, json.dumps({"rows": list(range(5))}).encode())
    bundle = ResourceNames.upstream_blob("wf1", "sink", 1)
    await azure_storage.outputs.put(
        bundle, json.dumps({"far": OutputRef(inline="from-bundle").model_dump()}).encode()
    )
    await send_task(
        azure_storage,
        names,
        "wf1",
        "sink",
        'cat "$DAGQ_UPSTREAM" > "$DAGQ_OUTPUT"',
        upstream={"small": OutputRef(inline=[1, 2], size=5), "big": OutputRef(blob=big_blob)},
        upstream_blob=bundle,
    )
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent)
    assert event.output is not None
    assert event.output.inline == {
        "small": [1, 2],
        "big": {"rows": [0, 1, 2, 3, 4]},
        "far": "from-bundle",
    }


async def test_missing_upstream_blob_fails_with_a_clear_error(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(
        azure_storage,
        names,
        "wf1",
        "c",
        "true",
        upstream={"p": OutputRef(blob=ResourceNames.output_blob("wf1", "p", 1))},
    )
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "error"
    assert "output of parent 'p' is missing" in event.error


async def test_env_cwd_and_no_storage_secrets(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Make,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DAGQ_STORAGE", "AccountKey=secret")
    settings = worker_settings()
    await create_workflow(azure_storage, "wf1")
    script = (
        'python3 -c \'import json, os; json.dump({"cwd": os.getcwd(), "greeting": '
        'os.environ.get("GREETING"), "secret": os.environ.get("DAGQ_STORAGE")}, '
        'open(os.environ["DAGQ_OUTPUT"], "w"))\''
    )
    await send_task(azure_storage, names, "wf1", "a", script, env={"GREETING": "hi"})
    await send_task(azure_storage, names, "wf1", "b", script, cwd="shared/data")
    await send_task(azure_storage, names, "wf1", "c", script, cwd="../../etc")
    async with running_agent(settings, azure_storage):
        events = await read_events(azure_storage, 3)
    by_task = {e.task: e for e in events if hasattr(e, "task")}
    a, b, c = by_task["a"], by_task["b"], by_task["c"]
    assert isinstance(a, TaskCompletedEvent)
    assert a.output is not None
    assert isinstance(a.output.inline, dict)
    assert a.output.inline["greeting"] == "hi"
    assert a.output.inline["secret"] is None
    # Default cwd: a fresh per-attempt directory under the work dir.
    assert str(a.output.inline["cwd"]).startswith(str(settings.work_dir.resolve()))
    assert str(a.output.inline["cwd"]).endswith("attempts/wf1/a/1/work")
    assert isinstance(b, TaskCompletedEvent)
    assert b.output is not None
    assert isinstance(b.output.inline, dict)
    assert b.output.inline["cwd"] == str((settings.work_dir / "shared/data").resolve())
    # A relative cwd may not climb out of the work dir.
    assert isinstance(c, TaskFailedEvent)
    assert c.reason == "error"
    assert "leaves the worker's work directory" in c.error


async def test_timeout_kills_the_task_and_reports_it(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "slow", "sleep 30", timeout_s=0.5)
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "timeout"
    assert event.error == "timed out after 0.5 s"


async def test_started_event_only_for_tasks_running_longer_than_the_threshold(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "short", "true")
    await send_task(azure_storage, names, "wf1", "long", "sleep 1.5")
    async with running_agent(worker_settings(started_after_s=0.5), azure_storage):
        events = await read_events(azure_storage, 2)
    events += await drain_events(azure_storage)
    started = [e for e in events if isinstance(e, TaskStartedEvent)]
    assert [e.task for e in started] == ["long"]
    completed = {e.task: e for e in events if isinstance(e, TaskCompletedEvent)}
    assert completed["long"].started_at == pytest.approx(started[0].started_at, abs=0.5)
    # The started event comes before the completion of the same attempt.
    kinds = [e.kind for e in events if getattr(e, "task", None) == "long"]
    assert kinds == ["started", "completed"]


async def test_malformed_message_is_dead_lettered_and_the_loop_goes_on(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    queue = azure_storage.queues.get(names.task_queue("cpu"))
    await queue.send("{this is not a task")
    await queue.send(json.dumps({"v": 1, "workflow_id": "../x", "task": "t", "attempt": 1,
                                 "queue": "cpu", "cmd": "true"}))  # fmt: skip
    await send_task(azure_storage, names, "wf1", "ok", "true")
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent)
    letters = await azure_storage.deadletters.list()
    assert len(letters) == 2
    assert any("malformed task message" in letter.reason for letter in letters)
    assert any("invalid workflow id" in letter.reason for letter in letters)
    assert await queue.approximate_count() == 0


async def test_a_message_delivered_too_often_is_reported_failed_not_run(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", f"touch {marker}")
    # A first delivery whose worker "died": the message comes back after its visibility timeout.
    queue = azure_storage.queues.get(names.task_queue("cpu"))
    assert len(await queue.receive(1, 1)) == 1
    await asyncio.sleep(1.2)
    async with running_agent(worker_settings(max_deliveries=1), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "error"
    assert "delivered 2 times without finishing" in event.error
    assert not marker.exists()
    assert await queue.approximate_count() == 0
