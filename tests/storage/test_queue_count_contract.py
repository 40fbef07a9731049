"""The lost-dispatch signal rests on this: a queue's approximate count includes invisible messages
(received by a worker, or sent with a delay), on the memory fake AND Azurite."""

from __future__ import annotations

import time

from shared.storage.ports import Storage


async def test_count_includes_received_and_delayed_messages(storage: Storage, prefix: str) -> None:
    queue = storage.queues.get(f"{prefix}-q-cpu")  # the test's own (one per storage param)
    await queue.ensure()
    assert await queue.approximate_count() == 0
    await queue.send("held")
    await queue.send("later", delay_s=3600)
    [held] = await queue.receive(1, 3600)
    assert await queue.approximate_count() == 2
    await queue.delete(held)
    assert await queue.approximate_count() == 1


async def test_oldest_visible_at_peeks_the_first_visible_message(
    storage: Storage, prefix: str
) -> None:
    queue = storage.queues.get(f"{prefix}-peek")
    await queue.ensure()
    assert await queue.oldest_visible_at() is None
    await queue.send("later", delay_s=3600)
    assert await queue.oldest_visible_at() is None  # invisible messages are not peeked
    before = time.time()
    await queue.send("now")
    inserted = await queue.oldest_visible_at()
    assert inserted is not None
    assert before - 5 <= inserted <= time.time() + 5
    assert await storage.queues.get(f"{prefix}-never-created").oldest_visible_at() is None
