"""Issue 32: a worker's events ready together travel as one message (``EventBatch``). The
coordinator applies each event as if it came alone, dead-letters a bad one with its own reason,
and deletes the message only once every event in it is handled: nothing is lost, nothing applied
twice."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import codec
from shared.coordinator import Coordinator
from shared.errors import MessageError
from shared.limits import MAX_BATCH_BYTES, MAX_MESSAGE_BYTES
from shared.messages import TaskCompletedEvent, encode
from shared.messages.wrappers import batch_text, events_of, wrap_redelivery
from shared.names import ResourceNames
from shared.states import TaskState
from shared.storage.memory import MemoryStorage, memory_storage
from shared.storage.ports import Storage
from tests.coordinator.helpers import FakeClock, diamond, fan, fast_options, load, submit

OPTIONS = fast_options()


def completion(workflow_id: str, task: str = "a", attempt: int = 1) -> str:
    return encode(
        TaskCompletedEvent(
            workflow_id=workflow_id, task=task, attempt=attempt, started_at=1.0, finished_at=2.0
        )
    )


async def two_started(
    storage: Storage, names: ResourceNames, clock: Callable[[], float] = time.time
) -> Coordinator:
    """wf1 and wf2 (diamonds) submitted and their roots dispatched."""
    for wid in ("wf1", "wf2"):
        await submit(storage, diamond(), wid, clock())
    coordinator = Coordinator(storage, names, OPTIONS, clock=clock)
    while (await coordinator.run_once()).stats.events_received:
        pass
    return coordinator


async def test_a_batch_is_applied_event_by_event_and_a_bad_event_is_dead_lettered_alone(
    storage: Storage, prefix: str
) -> None:
    coordinator = await two_started(storage, ResourceNames(prefix))
    bad = json.dumps(
        {"kind": "completed", "workflow_id": "wf1", "task": "b", "attempt": 2**32},
        separators=(",", ":"),
    )
    await storage.event_queue.send(batch_text([completion("wf1"), bad, completion("wf2")]))
    for _ in range(3):
        await coordinator.run_once()
    for wid in ("wf1", "wf2"):
        state = await load(storage, diamond(), wid)
        assert [state.task(i).state for i in range(3)] == [
            TaskState.COMPLETED, TaskState.QUEUED, TaskState.QUEUED,
        ]  # fmt: skip
    (letter,) = await storage.deadletters.list()
    assert letter.message_id.endswith("#2")
    assert letter.text == bad
    assert "attempt: Input should be less than or equal to 4294967295" in letter.reason
    assert await storage.event_queue.receive(32, 1) == []  # the message is gone


async def test_a_batch_stays_until_every_event_is_handled_and_nothing_is_applied_twice(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    coordinator = await two_started(memory_storage, ResourceNames("mem"), clock)
    real = codec.encode_state
    failing = {"wf2"}

    def encode_state(state: object) -> bytes:
        if getattr(state, "workflow_id", None) in failing:
            raise OverflowError("int too big to convert")
        return real(state)  # type: ignore[arg-type]

    monkeypatch.setattr(codec, "encode_state", encode_state)
    await memory_storage.event_queue.send(batch_text([completion("wf1"), completion("wf2")]))
    first = await coordinator.run_once()
    assert (first.stats.events_applied, first.stats.event_failures) == (1, 1)
    written = (await memory_storage.workflows.read_state("wf1")).etag
    assert memory_storage.event_queue.peek_texts() != []  # wf2's event is not handled yet
    failing.clear()
    clock.advance(OPTIONS.event_visibility_s + 1)
    second = await coordinator.run_once()
    assert second.stats.events_received == 2
    assert (await memory_storage.workflows.read_state("wf1")).etag == written  # a no-op again
    assert (await load(memory_storage, diamond(), "wf2")).task(0).state is TaskState.COMPLETED
    assert memory_storage.event_queue.peek_texts() == []


async def test_a_trigger_batch_is_applied_whole_or_handed_back_whole(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    names = ResourceNames("mem")
    await two_started(memory_storage, names, clock)
    text = batch_text([completion("wf1"), completion("wf2")])
    other = Coordinator(memory_storage, names, OPTIONS, clock=clock, hold_lease=True)
    holder = Coordinator(memory_storage, names, OPTIONS, clock=clock, hold_lease=True)
    assert (await holder.run_once()).leader
    bounced = await other.handle_trigger_message(text, "m1", dequeue_count=3)
    assert bounced.trigger_requeued
    assert memory_storage.event_queue.peek_texts() == [wrap_redelivery(text, 2)]
    clock.advance(OPTIONS.requeue_delay_s + 1)
    (message,) = await memory_storage.event_queue.receive(1, 30)
    await memory_storage.event_queue.delete(message)
    result = await holder.handle_trigger_message(message.text, message.id, dequeue_count=1)
    assert result.trigger_applied
    assert (result.stats.messages_received, result.stats.events_applied) == (1, 2)
    for wid in ("wf1", "wf2"):
        assert (await load(memory_storage, diamond(), wid)).task(0).state is TaskState.COMPLETED


def test_a_message_that_says_batch_and_is_not_one_is_refused_with_its_reason() -> None:
    for text, reason in [
        ('{"kind":"batch","events":[{"kind":"completed"}]}', "events: List should have at least 2"),
        ('{"kind":"batch","events":[1,2]}', "events.0: Input should be an object"),
        ('{"kind":"batch","events":[{}, {}],"x":1}', "x: Extra inputs are not permitted"),
    ]:
        with pytest.raises(MessageError, match="malformed event batch: .*" + reason):
            events_of(text)


def test_a_batch_at_its_limit_handed_back_in_a_redelivery_still_fits_a_queue_message() -> None:
    # A hostile worst case: events whose text is mostly characters JSON escapes.
    event = completion("wf1")[:-1] + ',"x":"' + '\\"' * 1000 + '"}'
    events = [event] * (MAX_BATCH_BYTES // (len(event) + 1))
    text = batch_text(events)
    assert len(wrap_redelivery(text, 4).encode()) <= MAX_MESSAGE_BYTES


def test_a_batch_within_the_budget_or_refused() -> None:
    one = completion("wf1")
    assert batch_text([one]) == one  # a lone event travels as itself
    with pytest.raises(MessageError, match="over the"):
        batch_text([one + " " * 13_000] * 2)  # JSON with trailing blanks: just its size
    with pytest.raises(MessageError, match="2 to 32 events"):
        batch_text([one] * 33)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=12), max_size=6),
    repeated=st.lists(st.integers(min_value=0, max_value=11), max_size=3),
    seed=st.randoms(use_true_random=False),
)
def test_however_reports_are_batched_the_workflow_ends_the_same(
    cuts: list[int], repeated: list[int], seed: Any
) -> None:
    """Any grouping of a fan-out's reports into messages (in any order, with duplicates) ends in
    the state the same reports reach one by one: all completed, nothing dead-lettered, nothing
    left on the queue."""

    async def run() -> None:
        clock = FakeClock()
        storage = memory_storage("mem", clock)
        wf = fan(10)
        await submit(storage, wf, "wf1", clock())
        coordinator = Coordinator(storage, ResourceNames("mem"), OPTIONS, clock=clock)
        await coordinator.run_once()
        await storage.event_queue.send(completion("wf1", "root"))
        await coordinator.run_once()
        leaves = [completion("wf1", f"leaf{i:05d}") for i in range(10)]
        reports = leaves + [leaves[i % 10] for i in repeated] + [completion("wf1", "root")]
        seed.shuffle(reports)
        bounds = sorted({0, len(reports), *(min(c, len(reports)) for c in cuts)})
        for start, end in itertools.pairwise(bounds):
            await storage.event_queue.send(batch_text(reports[start:end]))
        await coordinator.run_once()
        state = await load(storage, wf, "wf1")
        assert all(state.task(i).state is TaskState.COMPLETED for i in range(11))
        assert state.task(11).state is TaskState.QUEUED  # the sink, dispatched once
        assert await storage.deadletters.list() == []
        assert storage.event_queue.peek_texts() == []

    asyncio.run(run())
