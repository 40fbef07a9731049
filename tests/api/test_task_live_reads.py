"""Reads of a task's attempts, live log and progress (issue 20), on the memory storage."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared import codec
from shared.api.reads import get_attempts, get_log, get_task, get_workflow
from shared.errors import NotFoundError
from shared.names import ResourceNames
from shared.progress import TaskProgress
from shared.storage.memory import MemoryStorage, memory_storage
from shared.storage.registry import WorkerRecord, WorkerTask
from tests.engine.history import WF_ID, History, task, workflow

CONTAINER = "mem-outputs"
TEXT = "text/plain; charset=utf-8"


async def store(storage: MemoryStorage, h: History) -> None:
    """Write the definition and state of ``h`` as the coordinator would."""
    await storage.workflows.create_definition(WF_ID, codec.encode_definition(h.wf))
    await storage.workflows.create_state(
        WF_ID, codec.encode_state(h.st), codec.state_metadata(h.st)
    )


async def log(storage: MemoryStorage, name: str, attempt: int, text: bytes) -> None:
    blob = ResourceNames.log_blob(WF_ID, name, attempt)
    await storage.outputs.append(blob, text, at=0, content_type=TEXT, create=True)


@pytest.fixture
async def flaky() -> tuple[MemoryStorage, History]:
    """Task ``flaky`` failed once (exit 75) and runs again on another worker; ``later`` waits;
    ``b`` never ran because ``x`` failed."""
    storage = memory_storage()
    h = History(workflow(task("flaky", retries=2), task("later", 0), task("x"), task("b", 2)))
    h.activate()
    h.started("flaky", worker="w1")
    h.failed("flaky", exit_code=75, error="simulated network error")
    h.failed("x", error="broken")
    h.started("flaky", worker="w2")
    await store(storage, h)
    await log(storage, "flaky", 1, b"first try\nsimulated network error\n")
    await log(storage, "flaky", 2, b"second try\n")
    return storage, h


async def test_attempts_are_listed_oldest_first_with_the_task_view_names(
    flaky: tuple[MemoryStorage, History],
) -> None:
    storage, _ = flaky
    listing = await get_attempts(storage, WF_ID, "flaky", outputs_container=CONTAINER)
    first, second = listing.items
    assert (first.attempt, first.state, first.exit_code, first.worker) == (1, "failed", 75, "w1")
    assert first.error == "exit code 75: simulated network error"
    assert not first.current
    assert first.kept
    assert first.log is not None
    assert first.log.blob == ResourceNames.log_blob(WF_ID, "flaky", 1)
    assert first.log_url == f"/api/workflows/{WF_ID}/tasks/flaky/log?attempt=1"
    assert (second.attempt, second.state, second.worker, second.current) == (
        2, "running", "w2", True,
    )  # fmt: skip
    assert second.error is None  # the earlier failure is attempt 1's, not this one's


async def test_the_log_of_each_attempt_and_whether_it_grows(
    flaky: tuple[MemoryStorage, History],
) -> None:
    storage, _ = flaky
    live = await get_log(storage, WF_ID, "flaky", attempt=None, offset=0)
    assert (live.attempt, live.data, live.growing, live.size) == (2, b"second try\n", True, 11)
    more = await get_log(storage, WF_ID, "flaky", attempt=None, offset=7)
    assert more.data == b"try\n"
    old = await get_log(storage, WF_ID, "flaky", attempt=1, offset=0)
    assert (old.attempt, old.growing) == (1, False)
    assert old.data.startswith(b"first try")
    with pytest.raises(NotFoundError, match="no attempt 3"):
        await get_log(storage, WF_ID, "flaky", attempt=3, offset=0)


async def test_a_task_that_never_ran_says_why_it_has_no_log(
    flaky: tuple[MemoryStorage, History],
) -> None:
    storage, _ = flaky
    with pytest.raises(NotFoundError, match=r"never ran.*upstream"):
        await get_log(storage, WF_ID, "b", attempt=None, offset=0)
    with pytest.raises(NotFoundError, match="has not run yet"):
        await get_log(storage, WF_ID, "later", attempt=1, offset=0)


async def test_a_task_that_has_not_started_reads_as_an_empty_growing_log(
    flaky: tuple[MemoryStorage, History],
) -> None:
    # Before: a 404 (the dashboard logged it as a console error while it waited for the task,
    # and `dagq logs -f` gave up on a task that had not started yet).
    storage, _ = flaky
    piece = await get_log(storage, WF_ID, "later", attempt=None, offset=0)
    assert (piece.attempt, piece.data, piece.size, piece.growing) == (0, b"", 0, True)


async def test_a_queued_attempt_reads_as_an_empty_growing_log() -> None:
    storage = memory_storage()
    h = History(workflow(task("a")))
    h.activate()
    await store(storage, h)
    piece = await get_log(storage, WF_ID, "a", attempt=None, offset=0)
    assert (piece.attempt, piece.data, piece.growing) == (1, b"", True)


async def test_progress_of_a_running_task_comes_from_its_workers_heartbeat(
    flaky: tuple[MemoryStorage, History],
) -> None:
    storage, _ = flaky
    progress = TaskProgress(0.3, {"epoch": 12.0, "loss": 0.21})
    tasks = [
        WorkerTask(WF_ID, "flaky", 2, progress),
        WorkerTask(WF_ID, "flaky", 1, TaskProgress(0.9)),  # a stale attempt: ignored
        WorkerTask("other", "flaky", 2, TaskProgress(0.5)),
    ]
    record = WorkerRecord(
        worker_id="w2", host="h", queues=["cpu"], slots=1, busy_slots=1, tasks=tasks,
        version="1", started_at=0.0, last_seen=0.0, interval_s=20.0,
    )  # fmt: skip
    await storage.registry.beat(record)
    detail = await get_task(storage, WF_ID, "flaky", outputs_container=CONTAINER)
    assert (detail.progress, detail.metrics) == (0.3, {"epoch": 12.0, "loss": 0.21})
    view = await get_workflow(storage, WF_ID)
    assert view.tasks["flaky"].progress == 0.3
    assert view.tasks["later"].progress is None
    dumped = view.tasks["later"].model_dump(exclude_unset=True)
    assert "progress" not in dumped
    assert "metrics" not in dumped


async def test_progress_of_a_purged_runs_worker_is_not_the_new_runs() -> None:
    """A worker of the id's purged workflow still runs its ``a`` attempt 1 and reports
    progress; the workflow submitted again under the id runs its own ``a`` attempt 1: only the
    progress of its own incarnation shows (issue #30, item 2)."""
    storage = memory_storage()
    h = History(workflow(task("a")))
    h.activate()
    h.started("a", worker="w2")
    h.st.incarnation, h.st.incarnation_blobs = 5, True  # (History's events carry none)
    await store(storage, h)
    tasks = [WorkerTask(WF_ID, "a", 1, TaskProgress(0.9), incarnation=4)]  # the purged run's
    record = WorkerRecord(
        worker_id="w1", host="h", queues=["cpu"], slots=1, busy_slots=1, tasks=tasks,
        version="1", started_at=0.0, last_seen=0.0, interval_s=20.0,
    )  # fmt: skip
    await storage.registry.beat(record)
    assert (await get_task(storage, WF_ID, "a", outputs_container=CONTAINER)).progress is None
    mine = [WorkerTask(WF_ID, "a", 1, TaskProgress(0.2), incarnation=5)]
    await storage.registry.beat(replace(record, worker_id="w2", tasks=mine))
    assert (await get_task(storage, WF_ID, "a", outputs_container=CONTAINER)).progress == 0.2


async def test_a_row_claiming_another_workers_task_sets_no_progress(
    flaky: tuple[MemoryStorage, History],
) -> None:
    """A worker can write any registry row (table roles stop at the table: docs/security.md);
    a row's progress counts only for tasks the workflow's state says its worker runs (issue 30
    item 5). ``flaky`` attempt 2 runs on w2; a row of w9, or one claiming to be w1, says 0.99."""
    storage, _ = flaky
    forged = [WorkerTask(WF_ID, "flaky", 2, TaskProgress(0.99, {"loss": 0.0}))]
    for impostor in ("w9", "w1"):
        record = WorkerRecord(
            worker_id=impostor, host="h", queues=["cpu"], slots=1, busy_slots=1, tasks=forged,
            version="1", started_at=0.0, last_seen=0.0, interval_s=20.0,
        )  # fmt: skip
        await storage.registry.beat(record)
    detail = await get_task(storage, WF_ID, "flaky", outputs_container=CONTAINER)
    assert (detail.progress, detail.metrics) == (None, None)
    own = [WorkerTask(WF_ID, "flaky", 2, TaskProgress(0.3))]
    await storage.registry.beat(replace(record, worker_id="w2", tasks=own))
    assert (await get_task(storage, WF_ID, "flaky", outputs_container=CONTAINER)).progress == 0.3


@pytest.mark.parametrize("raw", ["-1", "0", "x", "1.5", "٣", "99999999999"])
def test_a_bad_attempt_parameter_is_a_400_before_any_read(raw: str) -> None:
    import azure.functions as func

    from shared.api.query import LogQuery, parse_query
    from shared.errors import RequestError

    req = func.HttpRequest("GET", "http://h/api/x", params={"attempt": raw}, body=b"")
    with pytest.raises(RequestError, match="query parameter 'attempt' must be an integer from 1"):
        parse_query(req, LogQuery)
