"""Issue 11 §1-§2: hostile or broken events are dead-lettered with their reason; none wedges the
coordinator, forges a blob name, or is silently lost."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from shared import codec, engine
from shared.api.reads import get_workflow
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.engine.state import RuntimeState
from shared.messages import Event, decode_task_message
from shared.messages.wrappers import wrap_redelivery
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
OPTIONS = fast_options()


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
    memory_storage: MemoryStorage, clock: FakeClock, fields: dict[str, object], reason: str
) -> None:
    # Before: attempt >= 2**32 or started_at=1e300 made the state codec raise OverflowError on
    # every pass, and the children were dispatched again on every pass.
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(completion(**fields))
    await passes(memory_storage, clock, coord, 3)
    assert reason in await reasons(memory_storage)
    assert task_messages(memory_storage) == ["wf1/a/1"]  # b and c never dispatched
    assert memory_storage.event_queue.peek_texts() == []
    assert (await load(memory_storage, diamond(), "wf1")).task(0).state is TaskState.QUEUED


async def test_non_finite_numbers_are_refused(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(
        completion().replace('"started_at": 1.0', '"started_at": NaN')
    )
    await memory_storage.event_queue.send(
        completion().replace('"finished_at": 2.0', '"finished_at": 1e999')
    )
    await passes(memory_storage, clock, coord, 2)
    assert (await reasons(memory_storage)).count("Input should be a finite number") == 2
    assert task_messages(memory_storage) == ["wf1/a/1"]


@pytest.mark.parametrize("value", ["NaN", "-Infinity", '[1, {"x": 1e999}]'])
async def test_a_non_finite_inline_output_is_refused_and_every_answer_stays_json(
    memory_storage: MemoryStorage, clock: FakeClock, value: str
) -> None:
    # Before: the output was accepted, conditions compared it, and the API answered
    # {"inline":NaN}, which no JSON client (the task panel) can parse.
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(completion(output={"size": 3}).replace(
        '"size": 3', f'"size": 3, "inline": {value}'))  # fmt: skip
    await passes(memory_storage, clock, coord, 1)
    assert "JSON numbers must be finite" in await reasons(memory_storage)
    assert (await load(memory_storage, diamond(), "wf1")).task(0).state is TaskState.QUEUED
    body = (await get_workflow(memory_storage, "wf1")).model_dump_json()
    json.loads(body, parse_constant=lambda name: pytest.fail(f"{name} in an API body"))


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"log_blob": "../secretstuff/host.json"},
         "log_blob '../secretstuff/host.json' is not this attempt's log blob 'wf1/a/1/log.txt'"),
        ({"log_blob": ResourceNames.log_blob("wf1", "a", 2)}, "is not this attempt's log blob"),
        ({"output": {"blob": ResourceNames.output_blob("other", "a", 1), "size": 9}},
         "output.blob 'other/a/1/output.json' is not this attempt's output blob"),
    ],
)  # fmt: skip
async def test_a_forged_blob_name_is_dead_lettered_with_its_reason(
    memory_storage: MemoryStorage, clock: FakeClock, fields: dict[str, object], reason: str
) -> None:
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(completion(**fields))
    await passes(memory_storage, clock, coord, 1)
    assert reason in await reasons(memory_storage)
    view = (await load(memory_storage, diamond(), "wf1")).task(0)
    assert (view.state, view.log_blob, view.output) == (TaskState.QUEUED, None, None)


async def test_conventional_blob_names_are_accepted(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await started_diamond(memory_storage, clock)
    ref = {"blob": NAMES.output_blob("wf1", "a", 1), "size": 9000}
    await memory_storage.event_queue.send(
        completion(log_blob=NAMES.log_blob("wf1", "a", 1), output=ref)
    )
    await passes(memory_storage, clock, coord, 1)
    view = (await load(memory_storage, diamond(), "wf1")).task(0)
    assert (view.state, view.log_blob) == (
        TaskState.COMPLETED,
        ResourceNames.log_blob("wf1", "a", 1),
    )
    assert await memory_storage.deadletters.list() == []


async def test_an_attempt_never_dispatched_is_dead_lettered_with_the_engine_s_reason(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(completion(attempt=7))
    await passes(memory_storage, clock, coord, 1)
    assert "attempt 7, which was never dispatched" in await reasons(memory_storage)
    assert memory_storage.event_queue.peek_texts() == []
    assert (await load(memory_storage, diamond(), "wf1")).status is WorkflowStatus.RUNNING


async def test_an_event_for_a_missing_workflow_is_logged_with_its_id(
    memory_storage: MemoryStorage, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    coord = Coordinator(memory_storage, NAMES, OPTIONS, clock=clock)
    await memory_storage.event_queue.send('{"kind": "activate", "workflow_id": "ghost"}')
    with caplog.at_level(logging.WARNING, logger="dagq.coordinator"):
        result = await coord.run_once()
    assert result.stats.orphans == 1
    assert "(activate) for workflow ghost acknowledged as an orphan" in caplog.text
    assert memory_storage.event_queue.peek_texts() == []


def explode_for(workflow_id: str) -> Callable[..., bytes]:
    real = codec.encode_state

    def encode(state: RuntimeState) -> bytes:
        if state.workflow_id == workflow_id:
            raise OverflowError("int too big to convert")
        return real(state)

    return encode


async def test_a_failure_encoding_the_state_counts_and_ends_in_a_dead_letter(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: any failure outside engine.apply left the events unacknowledged without counting,
    # pass after pass, forever; the children were dispatched again on every pass.
    await submit(memory_storage, diamond(), "bad", clock())
    await submit(memory_storage, diamond(), "good", clock())
    monkeypatch.setattr(codec, "encode_state", explode_for("bad"))
    coord = Coordinator(memory_storage, NAMES, OPTIONS, clock=clock)
    failures = 0
    for _ in range(OPTIONS.max_dequeue_count + 2):
        failures += (await coord.run_once()).stats.event_failures
        clock.advance(OPTIONS.event_visibility_s + 1)
    assert failures == OPTIONS.max_dequeue_count
    assert memory_storage.event_queue.peek_texts() == []
    letters = await memory_storage.deadletters.list()
    assert [json.loads(letter.text)["workflow_id"] for letter in letters] == ["bad"]
    assert letters[0].reason == (
        "applying the event failed in 5 deliveries: encoding the state raised"
        " OverflowError('int too big to convert')"
    )
    assert (await load(memory_storage, diamond(), "good")).status is WorkflowStatus.RUNNING
    # At most one copy of the root per failed delivery (workers drop the duplicates by claim).
    assert task_messages(memory_storage).count("bad/a/1") == OPTIONS.max_dequeue_count


async def test_one_failing_event_does_not_hold_back_the_others_of_its_workflow(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    coord = await started_diamond(memory_storage, clock)
    await memory_storage.event_queue.send(completion())
    await passes(memory_storage, clock, coord, 1)  # a done: b and c dispatched
    real = engine.apply

    def apply(
        wf: CompiledWorkflow, state: RuntimeState, event: Event, now: float, **kw: Any
    ) -> object:
        if getattr(event, "task", None) == "c":
            raise ZeroDivisionError("a defect")
        return real(wf, state, event, now, **kw)

    monkeypatch.setattr(engine, "apply", apply)
    await memory_storage.event_queue.send(completion("c"))
    await memory_storage.event_queue.send(completion("b"))
    result = await coord.run_once()
    assert (result.stats.event_failures, result.stats.events_applied) == (1, 1)
    state = await load(memory_storage, diamond(), "wf1")
    assert (state.task(1).state, state.task(2).state) == (TaskState.COMPLETED, TaskState.QUEUED)


async def test_a_re_sent_trigger_message_carries_its_deliveries_to_the_dead_letter(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the Functions host delivered each re-sent copy at dequeue count 1, so an event
    # that always failed was re-sent forever and never reached the poison queue or a dead letter.
    await submit(memory_storage, diamond(), "bad", clock())
    monkeypatch.setattr(codec, "encode_state", explode_for("bad"))
    coord = Coordinator(memory_storage, NAMES, OPTIONS, clock=clock)
    queue = memory_storage.event_queue
    hops = 0
    while (texts := queue.peek_texts()) and hops < 20:
        (message,) = await queue.receive(1, 30)
        await queue.delete(message)  # the host hands it over and deletes it on return
        result = await coord.handle_trigger_message(message.text, message.id, dequeue_count=1)
        hops += 1
        clock.advance(2)
    assert hops == OPTIONS.max_dequeue_count, texts
    assert result.trigger_applied
    (letter,) = await memory_storage.deadletters.list()
    assert letter.text == '{"kind":"activate","workflow_id":"bad"}'
    assert letter.reason.startswith("applying the event failed in 5 deliveries")


async def test_a_trigger_bounced_for_want_of_the_lease_does_not_count(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    holder = Coordinator(memory_storage, NAMES, OPTIONS, clock=clock, hold_lease=True)
    assert (await holder.run_once()).leader
    other = Coordinator(memory_storage, NAMES, OPTIONS, clock=clock)
    text = '{"kind":"activate","workflow_id":"x"}'
    result = await other.handle_trigger_message(text, "m", dequeue_count=1)
    assert result.trigger_requeued
    assert memory_storage.event_queue.peek_texts() == [text]  # as it was: no delivery spent on it
    result = await other.handle_trigger_message(wrap_redelivery(text, 3), "m", dequeue_count=2)
    assert memory_storage.event_queue.peek_texts()[-1] == wrap_redelivery(text, 4)
