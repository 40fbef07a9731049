"""Issue 11 §1-§2: hostile or broken events are dead-lettered with their reason; none wedges the
coordinator, forges a blob name, or is silently lost."""

from __future__ import annotations

import json
import logging

import pytest

from shared.coordinator import Coordinator
from shared.messages import decode_task_message
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
OPTIONS = fast_options()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def storage(clock: FakeClock) -> MemoryStorage:
    return memory_storage("mem", clock=clock)


def completion(task: str = "a", attempt: int = 1, **fields: object) -> str:
    event: dict[str, object] = {
        "kind": "completed", "workflow_id": "wf1", "task": task, "attempt": attempt,
        "started_at": 1.0, "finished_at": 2.0,
    }  # fmt: skip
    event.update(fields)
    return json.dumps(event)


def task_messages(storage: MemoryStorage) -> list[str]:
    texts = storage.queues.get(NAMES.task_queue("cpu")).peek_texts()
    return [decode_task_message(t).key for t in texts]


async def passes(storage: MemoryStorage, clock: FakeClock, coord: Coordinator, n: int) -> None:
    for _ in range(n):
        await coord.run_once()
        clock.advance(OPTIONS.event_visibility_s + 1)  # anything left unacked comes back


async def started_diamond(storage: MemoryStorage, clock: FakeClock) -> Coordinator:
    await submit(storage, diamond(), "wf1", clock())
    coord = Coordinator(storage, NAMES, OPTIONS, clock=clock)
    await coord.run_once()
    assert task_messages(storage) == ["wf1/a/1"]
    return coord


async def reasons(storage: MemoryStorage) -> str:
    return " | ".join(letter.reason for letter in await storage.deadletters.list())


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"attempt": 2**32}, "attempt: Input should be less than or equal to 4294967295"),
        ({"started_at": 1e300}, "started_at: Input should be less than or equal to 10000000000"),
        ({"finished_at": -5.0}, "finished_at: Input should be greater than or equal to 0"),
        ({"worker": "w" * 300}, "worker: String should have at most 256 characters"),
    ],
)
async def test_an_out_of_bounds_event_is_dead_lettered_once_and_dispatches_nothing(
    storage: MemoryStorage, clock: FakeClock, fields: dict[str, object], reason: str
) -> None:
    # Before: attempt >= 2**32 or started_at=1e300 made the state codec raise OverflowError on
    # every pass, and the children were dispatched again on every pass.
    coord = await started_diamond(storage, clock)
    await storage.event_queue.send(completion(**fields))
    await passes(storage, clock, coord, 3)
    assert reason in await reasons(storage)
    assert task_messages(storage) == ["wf1/a/1"]  # b and c never dispatched
    assert storage.event_queue.peek_texts() == []
    assert (await load(storage, diamond(), "wf1")).task(0).state is TaskState.QUEUED


async def test_non_finite_numbers_are_refused(storage: MemoryStorage, clock: FakeClock) -> None:
    coord = await started_diamond(storage, clock)
    await storage.event_queue.send(completion().replace('"started_at": 1.0', '"started_at": NaN'))
    await storage.event_queue.send(
        completion().replace('"finished_at": 2.0', '"finished_at": 1e999')
    )
    await passes(storage, clock, coord, 2)
    assert (await reasons(storage)).count("Input should be a finite number") == 2
    assert task_messages(storage) == ["wf1/a/1"]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"log_blob": "../secretstuff/host.json"},
         "log_blob '../secretstuff/host.json' is not this attempt's log blob 'wf1/a/1/log.txt'"),
        ({"log_blob": "wf1/a/2/log.txt"}, "is not this attempt's log blob"),
        ({"output": {"blob": "other/a/1/output.json", "size": 9}},
         "output.blob 'other/a/1/output.json' is not this attempt's output blob"),
    ],
)  # fmt: skip
async def test_a_forged_blob_name_is_dead_lettered_with_its_reason(
    storage: MemoryStorage, clock: FakeClock, fields: dict[str, object], reason: str
) -> None:
    coord = await started_diamond(storage, clock)
    await storage.event_queue.send(completion(**fields))
    await passes(storage, clock, coord, 1)
    assert reason in await reasons(storage)
    view = (await load(storage, diamond(), "wf1")).task(0)
    assert (view.state, view.log_blob, view.output) == (TaskState.QUEUED, None, None)


async def test_conventional_blob_names_are_accepted(
    storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await started_diamond(storage, clock)
    ref = {"blob": NAMES.output_blob("wf1", "a", 1), "size": 9000}
    await storage.event_queue.send(completion(log_blob=NAMES.log_blob("wf1", "a", 1), output=ref))
    await passes(storage, clock, coord, 1)
    view = (await load(storage, diamond(), "wf1")).task(0)
    assert (view.state, view.log_blob) == (TaskState.COMPLETED, "wf1/a/1/log.txt")
    assert await storage.deadletters.list() == []


async def test_an_attempt_never_dispatched_is_dead_lettered_with_the_engine_s_reason(
    storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await started_diamond(storage, clock)
    await storage.event_queue.send(completion(attempt=7))
    await passes(storage, clock, coord, 1)
    assert "attempt 7, which was never dispatched" in await reasons(storage)
    assert storage.event_queue.peek_texts() == []
    assert (await load(storage, diamond(), "wf1")).status is WorkflowStatus.RUNNING


async def test_an_event_for_a_missing_workflow_is_logged_with_its_id(
    storage: MemoryStorage, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    coord = Coordinator(storage, NAMES, OPTIONS, clock=clock)
    await storage.event_queue.send('{"kind": "activate", "workflow_id": "ghost"}')
    with caplog.at_level(logging.WARNING, logger="dagq.coordinator"):
        result = await coord.run_once()
    assert result.stats.orphans == 1
    assert "(activate) for workflow ghost acknowledged as an orphan" in caplog.text
    assert storage.event_queue.peek_texts() == []
