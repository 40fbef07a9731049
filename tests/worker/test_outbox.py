"""Issue 32: the worker's events ready while a send to their queue is in flight go as one message
(group commit, no timer); each ``post`` returns once its own event is sent, or raises its error."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import MessageError
from shared.limits import MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from shared.messages import TaskCompletedEvent, encode
from shared.messages.wrappers import events_of
from worker_agent.outbox import EventOutbox


def event(i: int, worker: str = "w") -> str:
    return encode(
        TaskCompletedEvent(
            workflow_id=f"wf{i}", task="t", attempt=1, started_at=1.0, finished_at=2.0,
            worker=worker,
        )
    )  # fmt: skip


class Queues:
    """Records what is sent per partition; a send waits for ``gate`` while it is closed."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail: Exception | None = None

    async def send(self, partition: int, text: str, _events: int) -> None:
        await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        self.sent.append((partition, text))

    def events(self, partition: int) -> list[str]:
        return [e.workflow_id for p, t in self.sent if p == partition for e in events_of(t)]


async def test_a_lone_event_goes_at_once_and_events_ready_meanwhile_go_together() -> None:
    queues = Queues()
    outbox = EventOutbox(queues.send)
    await outbox.post(event(0), 0)
    assert [t for _, t in queues.sent] == [event(0)]  # alone: the event itself, no wrapper
    queues.gate.clear()
    first = asyncio.create_task(outbox.post(event(1), 0))
    await asyncio.sleep(0)  # its send is in flight
    rest = [asyncio.create_task(outbox.post(event(i), 0)) for i in range(2, 6)]
    other = asyncio.create_task(outbox.post(event(9), 1))  # another partition: its own lane
    await asyncio.sleep(0)
    assert not any(t.done() for t in [first, *rest])
    queues.gate.set()
    await asyncio.gather(first, *rest, other)
    assert queues.events(0) == [f"wf{i}" for i in range(6)]
    assert queues.events(1) == ["wf9"]
    assert len(queues.sent) == 4  # wf0; wf1; wf2-wf5 as one batch; wf9
    assert (outbox.messages, outbox.events) == (4, 7)


async def test_a_failed_send_fails_only_the_posts_it_carried() -> None:
    queues = Queues()
    outbox = EventOutbox(queues.send)
    queues.gate.clear()
    queues.fail = MessageError("refused")
    doomed = [asyncio.create_task(outbox.post(event(i), 0)) for i in range(3)]
    await asyncio.sleep(0)
    queues.gate.set()
    results = await asyncio.gather(*doomed, return_exceptions=True)
    assert [type(r) for r in results] == [MessageError] * 3
    queues.fail = None
    await outbox.post(event(7), 0)  # the lane carries on
    assert queues.events(0) == ["wf7"]


async def test_a_cancelled_post_not_yet_taken_is_never_sent() -> None:
    queues = Queues()
    outbox = EventOutbox(queues.send)
    queues.gate.clear()
    first = asyncio.create_task(outbox.post(event(1), 0))
    await asyncio.sleep(0)
    dropped = asyncio.create_task(outbox.post(event(2), 0))
    kept = asyncio.create_task(outbox.post(event(3), 0))
    await asyncio.sleep(0)
    dropped.cancel()
    queues.gate.set()
    await asyncio.gather(first, kept)
    assert queues.events(0) == ["wf1", "wf3"]


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(min_value=0, max_value=20_000), min_size=1, max_size=80))
def test_every_event_is_sent_once_in_order_within_the_limits(sizes: list[int]) -> None:
    async def run() -> Queues:
        queues = Queues()
        outbox = EventOutbox(queues.send)
        queues.gate.clear()
        posts = [
            asyncio.create_task(outbox.post(event(i, "w" * max(1, min(size, 256))) + " " * size, 0))
            for i, size in enumerate(sizes)
        ]
        await asyncio.sleep(0)
        queues.gate.set()
        await asyncio.gather(*posts)
        return queues

    queues = asyncio.run(run())
    assert queues.events(0) == [f"wf{i}" for i in range(len(sizes))]
    for _, text in queues.sent:
        assert len(text.encode()) <= MAX_BATCH_BYTES or len(events_of(text)) == 1
        assert len(events_of(text)) <= MAX_BATCH_EVENTS


@pytest.mark.parametrize("count", [1, 2, MAX_BATCH_EVENTS + 1])
async def test_posts_from_many_slots_cost_fewer_messages_than_events(count: int) -> None:
    queues = Queues()
    outbox = EventOutbox(queues.send)
    queues.gate.clear()
    posts = [asyncio.create_task(outbox.post(event(i), 0)) for i in range(count)]
    await asyncio.sleep(0)
    queues.gate.set()
    await asyncio.gather(*posts)
    # All posted before the lane's first send: batches of at most 32.
    assert outbox.messages == -(-count // MAX_BATCH_EVENTS)
    assert outbox.events == count
