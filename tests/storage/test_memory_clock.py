"""The memory fakes take time from an injected clock: tests move time on instead of sleeping."""

from __future__ import annotations

from shared.storage.memory import memory_storage


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_visibility_and_delays_follow_the_clock() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    queue = storage.event_queue
    await queue.send("later", delay_s=10)
    assert await queue.receive(1, 30) == []
    clock.now += 10
    [message] = await queue.receive(1, 30)
    assert message.text == "later"
    assert message.inserted_at == 1_000.0

    clock.now += 29
    assert await queue.receive(1, 30) == []
    clock.now += 1
    [again] = await queue.receive(1, 30)
    assert again.dequeue_count == 2
    assert storage.event_queue.peek_texts() == ["later"]


async def test_lease_expires_with_the_clock_and_renews_until_taken() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    first = await storage.lease.acquire(15)
    assert first is not None
    clock.now += 15
    assert await storage.lease.is_held() is False
    assert await storage.lease.renew(first) is True  # expired but nobody took it: Azure renews
    clock.now += 15
    second = await storage.lease.acquire(15)
    assert second is not None
    assert await storage.lease.renew(first) is False
