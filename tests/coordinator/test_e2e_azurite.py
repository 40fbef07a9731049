"""End to end on Azurite: coordinator (run_forever) and synthetic workers, real queues and blobs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace

import pytest
from pydantic import JsonValue

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared import codec
from shared.coordinator import Coordinator, CoordinatorOptions
from shared.definition.workflow import CompiledWorkflow, RetryPolicy
from shared.engine.state import RuntimeState
from shared.messages import CancelEvent, RetryEvent, TaskMessage, encode
from shared.settings import Settings
from shared.states import TaskState, WorkflowStatus
from shared.storage.factory import ensure_resources, open_storage
from shared.storage.ports import Storage
from tests.coordinator.helpers import diamond, fan, submit, task

pytestmark = pytest.mark.azurite


def options(settings: Settings, **kw: object) -> CoordinatorOptions:
    return replace(
        CoordinatorOptions.from_settings(settings),
        lease_s=15,
        **kw,  # type: ignore[arg-type]
    )


@asynccontextmanager
async def running(
    settings: Settings, worker: SyntheticWorker | None, **kw: object
) -> AsyncIterator[tuple[Storage, Coordinator]]:
    """Storage with a coordinator (long-lived mode) and a synthetic worker running on it."""
    async with open_storage(settings) as storage:
        await ensure_resources(storage)
        coord = Coordinator(storage, settings.names, options(settings, **kw))
        stop = asyncio.Event()
        jobs = [asyncio.create_task(coord.run_forever(stop, sweep_every_s=0.5))]
        if worker is not None:
            worker.storage = storage
            jobs.append(asyncio.create_task(worker.run(stop)))
        try:
            yield storage, coord
        finally:
            stop.set()
            await asyncio.gather(*jobs)


async def state_of(storage: Storage, wf: CompiledWorkflow, wid: str) -> RuntimeState:
    data = (await storage.workflows.read_state(wid)).data
    return codec.decode_state(data, wf)


async def wait_for(
    check: Callable[[], Awaitable[bool]], timeout_s: float = 60.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def finish(storage: Storage, wf: CompiledWorkflow, wid: str, timeout_s: float = 60.0
                 ) -> RuntimeState:  # fmt: skip
    async def terminal() -> bool:
        return (await state_of(storage, wf, wid)).status.is_terminal

    await wait_for(terminal, timeout_s, f"workflow {wid} to finish")
    return await state_of(storage, wf, wid)


def worker(settings: Settings, script: dict[str, Behavior] | None = None, **kw: object
           ) -> SyntheticWorker:  # fmt: skip
    return SyntheticWorker(None, settings.names, ["cpu"], script or {}, **kw)  # type: ignore[arg-type]


def task_and_parents(message: TaskMessage, upstream: dict[str, JsonValue]) -> JsonValue:
    return {"task": message.task, "seen": list(sorted(upstream))}


async def test_diamond(settings: Settings) -> None:
    wf = diamond()
    w = worker(settings, {"*": Behavior(output=task_and_parents)})
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "dia", time.time())
        state = await finish(storage, wf, "dia")
        assert state.status is WorkflowStatus.COMPLETED
        output = state.task(3).output
        assert output is not None
        assert output.inline == {"task": "d", "seen": ["b", "c"]}

        async def projected() -> bool:  # the index row is written behind the state (a moment)
            return (await storage.index.list()).rows[0].status is WorkflowStatus.COMPLETED

        await wait_for(projected, 30.0, "the index row to say completed")
        assert (await storage.index.list()).rows[0].counts == {"completed": 4}
    assert set(w.executions.values()) == {1}


@pytest.mark.slow
async def test_thousand_task_fan_out_fan_in(settings: Settings) -> None:
    wf = fan(998)
    w = worker(settings, claim=False)
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "fan1k", time.time())
        state = await finish(storage, wf, "fan1k", timeout_s=120)
        assert state.status is WorkflowStatus.COMPLETED
        assert state.counts()["completed"] == 1000

        async def events_acked() -> bool:  # the last deletes follow the final flush
            return await storage.event_queue.approximate_count() == 0

        await wait_for(events_acked, 30, "every event to be deleted")
    assert sum(w.executions.values()) == 1000


async def test_retries_with_backoff(settings: Settings) -> None:
    policy = RetryPolicy(initial_delay_s=0.3, multiplier=2.0)
    wf = CompiledWorkflow.of(
        "flaky", [task("flaky", num_retries=3, retry=policy), task("after", (0,))]
    )
    w = worker(settings, {"flaky": Behavior(fail_times=2, exit_code=7)})
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "flaky", time.time())
        state = await finish(storage, wf, "flaky")
    assert state.status is WorkflowStatus.COMPLETED
    assert state.task(0).attempt == 3
    runs = sorted((e.message.attempt, e.outcome) for e in w.history if e.message.task == "flaky")
    assert runs == [(1, "failed"), (2, "failed"), (3, "completed")]


async def test_retry_budget_exhausted_fails_the_workflow(settings: Settings) -> None:
    wf = CompiledWorkflow.of("bad", [task("bad", num_retries=1), task("after", (0,))])
    w = worker(settings, {"bad": Behavior(always_fail=True, exit_code=3)})
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "bad", time.time())
        state = await finish(storage, wf, "bad")
    assert state.status is WorkflowStatus.FAILED
    assert state.task(0).state is TaskState.FAILED
    assert state.task(0).attempt == 2
    assert state.task(1).state is TaskState.UPSTREAM_FAILED


async def test_cancel_while_tasks_run(settings: Settings) -> None:
    wf = fan(4)
    w = worker(settings, {"leaf*": Behavior(duration_s=30)}, watch_cancel=True)
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "cx", time.time())

        async def leaves_running() -> bool:
            return w.running == 4

        await wait_for(leaves_running, what="the leaves to run")
        state = await state_of(storage, wf, "cx")
        await storage.index.request_cancel("cx", state.created_at)
        await storage.event_queue.send(encode(CancelEvent(workflow_id="cx", reason="test")))
        state = await finish(storage, wf, "cx", timeout_s=30)
    assert state.status is WorkflowStatus.CANCELLED
    assert [state.task(i).state for i in range(6)] == [TaskState.COMPLETED] + [
        TaskState.CANCELLED
    ] * 5
    assert sorted(e.outcome for e in w.history) == ["cancelled"] * 4 + ["completed"]


async def test_rerun_from_failure(settings: Settings) -> None:
    wf = diamond()
    w = worker(settings, {"c": Behavior(always_fail=True)})
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "re", time.time())
        state = await finish(storage, wf, "re")
        assert state.status is WorkflowStatus.FAILED
        assert state.task(3).state is TaskState.UPSTREAM_FAILED
        w.script["c"] = Behavior()  # fixed
        await storage.index.clear_cancel("re", state.created_at)
        await storage.event_queue.send(encode(RetryEvent(workflow_id="re", run=state.run)))

        async def rerun_done() -> bool:
            s = await state_of(storage, wf, "re")
            return s.run == 2 and s.status.is_terminal

        await wait_for(rerun_done, what="the rerun")
        state = await state_of(storage, wf, "re")
    assert state.status is WorkflowStatus.COMPLETED
    assert [state.task(i).attempt for i in range(4)] == [1, 1, 2, 1]
    ran = sorted(e.message.key for e in w.history)
    assert ran == ["re/a/1", "re/b/1", "re/c/1", "re/c/2", "re/d/1"]  # a and b not rerun


async def test_conditions(settings: Settings) -> None:
    tasks = [
        task("score"),
        task("deploy", (0,), condition="inputs.score.value > 0.5"),
        task("retrain", (0,), condition="inputs.score.value <= 0.5"),
        task("report", (1, 2), dep_policy="any"),
    ]
    wf = CompiledWorkflow.of("cond", tasks)
    w = worker(settings, {"score": Behavior(output={"value": 0.9})})
    async with running(settings, w) as (storage, _):
        await submit(storage, wf, "cond", time.time())
        state = await finish(storage, wf, "cond")
    assert state.status is WorkflowStatus.COMPLETED
    assert [state.task(i).state for i in range(4)] == [
        TaskState.COMPLETED, TaskState.COMPLETED, TaskState.SKIPPED, TaskState.COMPLETED
    ]  # fmt: skip
    assert "retrain" not in {e.message.task for e in w.history}


async def test_max_parallelism_from_state_after_each_pass(settings: Settings) -> None:
    wf = CompiledWorkflow.of("mp", list(fan(20).tasks), max_parallelism=4)
    w = worker(settings, {"leaf*": Behavior(duration_s=0.05)})
    async with open_storage(settings) as storage:
        await ensure_resources(storage)
        w.storage = storage
        coord = Coordinator(storage, settings.names, options(settings))
        stop = asyncio.Event()
        job = asyncio.create_task(w.run(stop))
        await submit(storage, wf, "mp", time.time())
        peak = 0
        try:
            for _ in range(2000):
                await coord.run_once()
                state = await state_of(storage, wf, "mp")
                counts = state.counts()
                in_flight = counts.get("queued", 0) + counts.get("running", 0)
                assert in_flight <= 4, counts
                peak = max(peak, in_flight)
                if state.status.is_terminal:
                    break
                await asyncio.sleep(0.01)
        finally:
            stop.set()
            await job
    assert state.status is WorkflowStatus.COMPLETED
    assert peak == 4
    assert w.max_running <= 4


async def test_queue_timeout(settings: Settings) -> None:
    wf = CompiledWorkflow.of("qt", [task("a", queue="gpu", queue_timeout_s=1.0), task("b", (0,))])
    async with running(settings, None) as (storage, _):  # no gpu worker at all
        await submit(storage, wf, "qt", time.time())
        state = await finish(storage, wf, "qt", timeout_s=30)
    assert state.status is WorkflowStatus.FAILED
    assert state.task(0).state is TaskState.FAILED
    assert "queue_timeout" in (state.task(0).error or "")
    assert state.task(1).state is TaskState.UPSTREAM_FAILED


async def test_second_coordinator_process_is_refused(
    settings: Settings, storage_env: dict[str, str]
) -> None:
    async with open_storage(settings) as storage:
        await ensure_resources(storage)
        holder = Coordinator(storage, settings.names, options(settings), hold_lease=True)
        assert (await holder.run_once()).leader
        try:
            env = {**os.environ, **storage_env}
            proc = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "shared.coordinator"],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            await holder.release_lease()
    assert proc.returncode == 3, proc.stderr
    assert "another coordinator holds the lease" in proc.stderr
    assert "--wait-for-lease" in proc.stderr


async def test_coordinator_process_runs_and_stops_gracefully(
    settings: Settings, storage_env: dict[str, str]
) -> None:
    wf = diamond()
    w = worker(settings)
    env = {**os.environ, **storage_env, "DAGQ_LEASE_S": "15"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "shared.coordinator", "--ensure-resources", "--sweep-every", "1",
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        async with open_storage(settings) as storage:
            await ensure_resources(storage)
            w.storage = storage
            stop = asyncio.Event()
            job = asyncio.create_task(w.run(stop))
            await submit(storage, wf, "proc", time.time())
            state = await finish(storage, wf, "proc")
            stop.set()
            await job
            assert state.status is WorkflowStatus.COMPLETED
            assert await storage.lease.is_held()
            proc.terminate()  # SIGTERM: finish the pass, release the lease, exit 0
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode == 0, err.decode()
            assert not await storage.lease.is_held()
            assert b'"event": "coordinator_pass"' in err  # one structured record per busy pass
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_coordinator_help_explains_the_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "shared.coordinator", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    for option in ("--wait-for-lease", "--sweep-every", "--once", "DAGQ_STORAGE"):
        assert option in out
