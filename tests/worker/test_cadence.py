"""The running task's cadences (worker_agent/cadence.py) and the cancel answers its tasks share
(worker_agent/cancel_watch.py): bounds users rely on, and requests that stop growing at the young
task's rate."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.limits import LOG_CHUNK_BYTES as CHUNK_BYTES
from shared.messages import TaskMessage
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from tests.worker.waiting import wait_for
from worker_agent.cadence import (
    cancel_check_interval,
    growing,
    heartbeat_schedule,
    live_interval,
    progress_interval,
    ticks_within,
)
from worker_agent.config import WorkerSettings
from worker_agent.heartbeat import Heartbeat
from worker_agent.live import AttemptKey, LiveAttempt
from worker_agent.logfile import LogFile
from worker_agent.state_heads import StateHeads

LOG = logging.LoggerAdapter(logging.getLogger("test"), {})

seconds = st.floats(min_value=0.05, max_value=3600, allow_nan=False)


@given(age=st.floats(min_value=0, max_value=1e6), first=seconds, cap=seconds)
def test_an_interval_starts_at_its_first_value_and_never_passes_its_cap(
    age: float, first: float, cap: float
) -> None:
    interval = growing(age, first, cap)
    assert first <= interval <= max(first, cap)
    assert growing(age + 1, first, cap) >= interval  # an older task is never looked at sooner
    assert growing(0.0, first, cap) == first


@settings(deadline=None)
@given(
    first=st.floats(min_value=1, max_value=3600),
    cap=seconds,
    duration=st.floats(min_value=0, max_value=20_000),
)
def test_the_looks_of_a_long_task_grow_at_the_cap_rate_not_the_first(
    first: float, cap: float, duration: float
) -> None:
    looks = ticks_within(lambda age: growing(age, first, cap), duration)
    assert looks * first <= duration * (1 + 1e-9)  # within float rounding of the sum
    top = max(first, cap)
    # past the age where the cap is reached (4 caps), each further cap adds one look
    young = ticks_within(lambda age: growing(age, first, cap), 4 * top)
    assert looks <= young + math.ceil(max(0.0, duration - 4 * top) / top) + 1


def test_the_defaults_documented_in_docs_worker_md() -> None:
    worker = WorkerSettings(queues=["q"])
    assert cancel_check_interval(worker, 0) == 5.0
    assert cancel_check_interval(worker, 60) == 15.0
    assert cancel_check_interval(worker, 3600) == 30.0
    assert live_interval(worker, 0) == 5.0
    assert live_interval(worker, 3600) == 20.0
    assert progress_interval(worker) == worker.registry_s == 20.0
    assert progress_interval(WorkerSettings(queues=["q"], progress_s=2)) == 2
    # the cap at the first interval is the fixed cadence of before
    fixed = WorkerSettings(queues=["q"], cancel_check_max_s=5, live_max_s=5)
    assert ticks_within(lambda a: cancel_check_interval(fixed, a), 60) == 12
    assert ticks_within(lambda a: cancel_check_interval(worker, a), 60) == 8
    assert ticks_within(lambda a: cancel_check_interval(worker, a), 600) == 28


def _message(workflow: str, task: str) -> TaskMessage:
    return TaskMessage(workflow_id=workflow, task=task, attempt=1, queue="cpu", cmd="true")


async def test_tasks_of_one_workflow_share_a_cancel_answer_no_older_than_asked() -> None:
    storage = memory_storage()
    await storage.workflows.create_state("wf", b"{}", {"status": "running"})
    now = [100.0]
    checks = StateHeads(storage, clock=lambda: now[0])
    tasks = [_message("wf", f"t{i}") for i in range(8)]
    assert not any(await asyncio.gather(*(checks.cancelled(m, fresh_s=5) for m in tasks)))
    assert checks.heads == 1  # eight tasks, one HEAD in flight for all
    now[0] += 4.0
    assert not await checks.cancelled(tasks[0], fresh_s=5)
    assert checks.heads == 1  # 4 s old answers a 5 s bound
    etag = (await storage.workflows.read_state("wf")).etag
    await storage.workflows.write_state("wf", b"{}", etag, {"status": "cancelling"})
    assert not await checks.cancelled(tasks[1], fresh_s=5)  # still within its bound
    assert await checks.cancelled(tasks[1], fresh_s=3)  # asked fresher: a new HEAD sees it
    assert checks.heads == 2
    # another workflow, and another incarnation of the same id, are asked on their own
    assert await checks.cancelled(_message("gone", "a"), fresh_s=5)
    other = TaskMessage(
        workflow_id="wf", task="t", attempt=1, queue="cpu", cmd="true", incarnation=7
    )
    assert await checks.cancelled(other, fresh_s=5)
    assert checks.heads == 4


async def test_the_check_before_a_run_takes_a_head_sent_after_its_claim_and_no_older() -> None:
    # A fan-out's tasks claimed together share one HEAD; a task claimed after a HEAD was sent
    # never takes it (seed 2306: a check from before the claim may be stale when the task runs).
    storage = memory_storage()
    await storage.workflows.create_state("wf", b"{}", {"status": "running"})
    now = [100.0]
    heads = StateHeads(storage, clock=lambda: now[0])
    tasks = [_message("wf", f"t{i}") for i in range(8)]
    claimed = now[0]
    seen = await asyncio.gather(*(heads.seen(m, sent_after=claimed) for m in tasks))
    assert {s.status for s in seen} == {WorkflowStatus.RUNNING}
    assert heads.heads == 1
    now[0] += 0.5
    etag = (await storage.workflows.read_state("wf")).etag
    await storage.workflows.write_state("wf", b"{}", etag, {"status": "cancelling"})
    late = await heads.seen(tasks[0], sent_after=now[0])  # claimed after that HEAD was sent
    assert late.status is WorkflowStatus.CANCELLING
    assert heads.heads == 2
    assert await heads.cancelled(tasks[1], fresh_s=5)  # the newer answer serves the cancel check
    assert heads.heads == 2
    assert (await heads.seen(_message("gone", "a"), sent_after=now[0])).missing


async def test_a_failed_cancel_check_is_not_remembered() -> None:
    storage = memory_storage()
    checks = StateHeads(storage)

    async def broken(workflow_id: str) -> dict[str, str]:
        raise OSError("storage is down")

    real = storage.workflows.state_metadata
    storage.workflows.state_metadata = broken  # type: ignore[method-assign]
    try:
        await checks.cancelled(_message("wf", "t"), fresh_s=5)
    except OSError:
        pass
    else:
        raise AssertionError("the HEAD's failure reaches the caller")
    storage.workflows.state_metadata = real  # type: ignore[method-assign]
    await storage.workflows.create_state("wf", b"{}", {"status": "cancelled"})
    assert await checks.cancelled(_message("wf", "t"), fresh_s=5)
    assert checks.heads == 2


async def test_a_long_tasks_log_is_appended_less_often_while_its_progress_is_read_as_often(
    tmp_path: Path,
) -> None:
    storage = memory_storage()
    seen: list[float | None] = []
    log_path, progress_path = tmp_path / "log.txt", tmp_path / "p.jsonl"
    with LogFile.create(log_path) as log, progress_path.open("ab") as progress:
        live = LiveAttempt(
            AttemptKey("wf", "t", 1), LogFile.create(progress_path), log, storage.outputs,
            max_log_bytes=1 << 20, interval_s=0.02, logger=LOG, lost=lambda: False,
            on_progress=lambda _key, p: seen.append(p.metrics.get("step")),
            ship_interval=lambda age: growing(age, 0.02, 0.2),
        )  # fmt: skip
        started = time.monotonic()
        live.start()
        for i in range(40):  # a task that prints and reports progress steadily
            with log_path.open("ab") as task:
                task.write(b"line %d\n" % i)
            progress.write(b'{"progress": 0.5, "step": %d}\n' % i)
            progress.flush()
            await asyncio.sleep(0.02)
        elapsed = time.monotonic() - started
        await live.stop()
        live_writes = live.shipper.writes
        assert await live.finish() == "wf/t/1/log.txt"
    assert live_writes >= 2  # created and appended while the task ran
    # never more appends than the cadence allows (a slow machine makes fewer, never more)
    assert live_writes <= ticks_within(lambda age: growing(age, 0.02, 0.2), elapsed) + 1
    assert len(seen) > live_writes  # progress is read at the first interval all along
    assert seen[-1] == 39
    data = await storage.outputs.get("wf/t/1/log.txt")
    assert data == b"".join(b"line %d\n" % i for i in range(40))


@given(
    visibility=st.integers(min_value=1, max_value=3600),
    longest=st.integers(min_value=1, max_value=7200),
    age=st.floats(min_value=0, max_value=1e6),
)
def test_a_heartbeat_asks_for_at_most_the_longest_visibility_and_extends_well_before_it_ends(
    visibility: int, longest: int, age: float
) -> None:
    settings = WorkerSettings(queues=["q"], visibility_s=visibility, visibility_max_s=longest)
    asked, wait = heartbeat_schedule(settings, age)
    assert visibility <= asked <= max(visibility, longest)
    assert wait == asked / 3  # two thirds of it left for retries when an extension fails
    assert heartbeat_schedule(settings, 0.0)[0] == visibility


async def test_a_dead_workers_long_held_message_comes_back_within_the_longest_visibility() -> None:
    now = [1000.0]
    storage = memory_storage("hb", clock=lambda: now[0])
    queue = storage.queues.get("hb-q-cpu")
    await queue.ensure()
    await queue.send("task")
    settings = WorkerSettings(queues=["q"], visibility_s=60, visibility_max_s=300, heartbeat_s=0.02)
    age = [0.0]  # how long the message has been held, moved on by the test
    (received,) = await queue.receive(1, settings.visibility_s)
    heartbeat = Heartbeat(
        queue, received, visibility_s=settings.visibility_s, interval_s=0.02,
        schedule=lambda _real_age: heartbeat_schedule(settings, age[0]),
    )  # fmt: skip
    heartbeat.start()
    age[0] = 3 * 3600.0  # a task three hours old: extended to the longest visibility
    extensions = heartbeat.extensions
    await wait_for(lambda: heartbeat.extensions >= extensions + 2)
    assert heartbeat._task is not None
    heartbeat._task.cancel()  # the worker dies: no release, no delete
    with contextlib.suppress(asyncio.CancelledError):
        await heartbeat._task
    now[0] += 299
    assert await queue.receive(1, 60) == []  # the visibility asked for still holds
    now[0] += 2
    (again,) = await queue.receive(1, 60)  # then another worker gets it
    assert again.text == "task"


def test_the_cost_estimate_counts_the_workers_first_intervals() -> None:
    # dagq cost's request estimate (shared/, which cannot read the worker's settings) uses the
    # young task's rates as its upper bound: they are the worker's defaults
    from shared.cost import requests

    worker = WorkerSettings(queues=["q"])
    assert cancel_check_interval(worker, 0) == requests.CANCEL_CHECK_S
    assert live_interval(worker, 0) == requests.LIVE_LOG_S
    assert heartbeat_schedule(worker, 0)[1] == requests.HEARTBEAT_S


async def test_a_whole_chunk_of_log_is_appended_without_waiting_for_the_interval(
    tmp_path: Path,
) -> None:
    storage = memory_storage()
    log_path = tmp_path / "log.txt"
    with LogFile.create(log_path) as log:
        live = LiveAttempt(
            AttemptKey("wf", "t", 1), LogFile.create(tmp_path / "p.jsonl"), log, storage.outputs,
            max_log_bytes=4 * CHUNK_BYTES, interval_s=0.02, logger=LOG, lost=lambda: False,
            on_progress=None, ship_interval=lambda _age: 3600.0,  # time alone: not within the test
        )  # fmt: skip
        live.start()
        log_path.write_bytes(b"x" * (CHUNK_BYTES + 10))  # a task that prints a lot at once
        await wait_for(lambda: live.shipper.shipped == CHUNK_BYTES)
        assert live.shipper.writes == 2  # the creation, then one whole chunk
        await asyncio.sleep(0.1)
        assert live.shipper.writes == 2  # the 10 bytes left wait for the interval (or the end)
        await live.stop()
        assert await live.finish() == "wf/t/1/log.txt"
    assert len(await storage.outputs.get("wf/t/1/log.txt")) == CHUNK_BYTES + 10
