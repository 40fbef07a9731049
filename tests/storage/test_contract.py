"""Contract tests of the storage ports: every test runs against the memory fakes AND Azurite.

Whatever the coordinator, API or worker relies on is asserted here, so the fakes cannot drift from
the real thing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import pytest

from shared.errors import (
    ConflictError,
    InvalidContinuationError,
    MessageError,
    NotFoundError,
    StaleStateError,
)
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.azure import AzureStorage
from shared.storage.memory import MemoryStorage
from shared.storage.ports import IndexRow, Queue, ReceivedMessage, Storage

EVENTUALLY_S = 15.0


async def eventually(probe: Callable[[], Awaitable[bool]], timeout_s: float = EVENTUALLY_S) -> None:
    """Poll ``probe`` until it is true; fail after a generous timeout (never a timing assert)."""
    deadline = time.monotonic() + timeout_s
    while not await probe():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


# -- workflow blobs ------------------------------------------------------------------------------


async def test_definition_is_create_only(storage: Storage) -> None:
    assert await storage.workflows.create_definition("wf1", b"first") is True
    assert await storage.workflows.create_definition("wf1", b"second") is False
    assert await storage.workflows.read_definition("wf1") == b"first"


async def test_missing_definition_is_not_found(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        await storage.workflows.read_definition("nope")


async def test_state_create_only_then_cas(storage: Storage) -> None:
    etag1 = await storage.workflows.create_state("wf1", b"s1", {"status": "pending"})
    with pytest.raises(ConflictError):
        await storage.workflows.create_state("wf1", b"other", {"status": "pending"})
    assert await storage.workflows.read_state("wf1") == (b"s1", etag1, {"status": "pending"})

    etag2 = await storage.workflows.write_state("wf1", b"s2", etag1, {"status": "running"})
    assert etag2 != etag1
    assert await storage.workflows.read_state("wf1") == (b"s2", etag2, {"status": "running"})
    assert (await storage.workflows.state_metadata("wf1"))["status"] == "running"

    # A writer holding the old ETag loses, and the newer state survives.
    with pytest.raises(StaleStateError):
        await storage.workflows.write_state("wf1", b"stale", etag1, {"status": "failed"})
    assert await storage.workflows.read_state("wf1") == (b"s2", etag2, {"status": "running"})
    assert (await storage.workflows.state_metadata("wf1"))["status"] == "running"


async def test_a_state_read_returns_the_metadata_of_the_version_it_read(storage: Storage) -> None:
    """The coordinator checks a state's partition from its read alone (no HEAD beside it)."""
    etag1 = await storage.workflows.create_state(
        "wf1", b"s1", {"status": "pending", "partition": "3"}
    )
    stored = await storage.workflows.read_state("wf1")
    assert (stored.data, stored.etag, stored.metadata) == (
        b"s1",
        etag1,
        {"status": "pending", "partition": "3"},
    )
    etag2 = await storage.workflows.write_state("wf1", b"s2", etag1, {"status": "running"})
    stored = await storage.workflows.read_state("wf1")  # a write replaces the metadata whole
    assert (stored.data, stored.etag, stored.metadata) == (b"s2", etag2, {"status": "running"})


async def delete_blob(storage: Storage, name: str) -> None:
    """Delete a workflows-container blob behind the ports' back (an operator, or a bug)."""
    if isinstance(storage, MemoryStorage):
        del storage.workflows.container.blobs[name]
    else:
        assert isinstance(storage, AzureStorage)
        container = storage.clients.blob.get_container_client(storage.names.workflows_container)
        await container.delete_blob(name)


async def test_write_to_a_vanished_state_is_not_found(storage: Storage) -> None:
    etag = await storage.workflows.create_state("wf1", b"s1", {})
    await delete_blob(storage, "wf1.state")
    with pytest.raises(NotFoundError):
        await storage.workflows.write_state("wf1", b"s2", etag, {})


async def test_state_metadata_is_written_on_create(storage: Storage) -> None:
    await storage.workflows.create_state("wf1", b"\x00\x01", {"status": "pending", "run": "1"})
    assert await storage.workflows.state_metadata("wf1") == {"status": "pending", "run": "1"}


async def test_missing_state_is_not_found(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        await storage.workflows.read_state("nope")
    with pytest.raises(NotFoundError):
        await storage.workflows.state_metadata("nope")


# -- outputs -------------------------------------------------------------------------------------


async def test_outputs_put_get_and_create_if_absent(storage: Storage) -> None:
    name = ResourceNames.output_blob("wf1", "train", 1)
    await storage.outputs.put(name, b'{"a": 1}')
    assert await storage.outputs.get(name) == b'{"a": 1}'
    await storage.outputs.put(name, b'{"a": 2}')  # put replaces
    assert await storage.outputs.get(name) == b'{"a": 2}'

    claim = ResourceNames.claim_blob("wf1", "train", 1, 3, flat=False)
    assert await storage.outputs.create_if_absent(claim, b"worker-a") is True
    assert await storage.outputs.create_if_absent(claim, b"worker-b") is False
    assert await storage.outputs.get(claim) == b"worker-a"

    with pytest.raises(NotFoundError):
        await storage.outputs.get(ResourceNames.log_blob("wf1", "train", 9))


# -- dead letters --------------------------------------------------------------------------------


async def test_dead_letters_keep_text_and_reason(storage: Storage) -> None:
    day = 1_790_000_000.0
    # Written in the order of their receive times: letters are ordered by when storage wrote them
    # (Last-Modified, to the second) before their stated time, so writes that straddle a second
    # must agree with it (written the other way round, the test failed on Azurite when they did).
    for i, at in [(1, day), (0, day + 20), (2, day + 86_400 + 5)]:
        name = await storage.deadletters.put(
            message_id=f"m{i}", text=f'{{"kind": "x{i}"}}', reason=f"bad {i}", received_at=at
        )
        assert name == ResourceNames.deadletter_blob(at, f"m{i}")

    letters = await storage.deadletters.list()
    assert [d.message_id for d in letters] == ["m1", "m0", "m2"]
    assert letters[0].text == '{"kind": "x1"}'
    assert letters[0].reason == "bad 1"
    assert letters[0].received_at == day

    recent = await storage.deadletters.list(limit=2)
    assert [d.message_id for d in recent] == ["m0", "m2"]


@pytest.mark.azurite
async def test_the_recent_dead_letters_cost_only_their_days(
    settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: listing the 20 most recent walked every entry (50,000 in the report) to sort them.
    from shared.settings import Settings
    from shared.storage.factory import ensure_resources, open_storage

    assert isinstance(settings, Settings)
    async with open_storage(settings) as storage:
        assert isinstance(storage, AzureStorage)
        await ensure_resources(storage)
        old, today = 1_600_000_000.0, 1_790_000_000.0
        for i in range(40):
            await storage.deadletters.put(message_id=f"old{i}", text="{}", reason="r",
                                          received_at=old + i)  # fmt: skip
        for i in range(3):
            await storage.deadletters.put(message_id=f"new{i}", text="{}", reason="r",
                                          received_at=today + i)  # fmt: skip
        container = storage.deadletters.container
        listed: list[str] = []
        real = container.list_blobs

        def counting(*args: object, **kwargs: object) -> object:
            async def names() -> object:
                async for blob in real(*args, **kwargs):  # type: ignore[arg-type]
                    listed.append(blob.name)
                    yield blob

            return names()

        monkeypatch.setattr(container, "list_blobs", counting)
        recent = await storage.deadletters.list(limit=3)
        assert [d.message_id for d in recent] == ["new0", "new1", "new2"]
        assert len(listed) == 3


@pytest.mark.azurite
async def test_the_recent_dead_letters_of_a_busy_day_are_the_newest_not_a_sample(
    settings: object,
) -> None:
    """Before: names were ``{day}/{message id}``, so a day with more letters than the scan
    bound listed a sample in message-id order (issue #30, item 4). Now a day lists newest
    first, and letters named the old way are still listed."""
    from shared.settings import Settings
    from shared.storage.factory import ensure_resources, open_storage

    assert isinstance(settings, Settings)
    async with open_storage(settings) as storage:
        assert isinstance(storage, AzureStorage)
        await ensure_resources(storage)
        day = 1_790_000_000.0
        # A letter named the old way ({day}/{message id}.json), a day earlier, written before
        # the others (as an earlier dagq wrote it): it still lists.
        container = storage.deadletters.container
        old_name = f"{time.strftime('%Y-%m-%d', time.gmtime(day - 86_400))}/legacy.json"
        body = b'{"message_id": "legacy", "text": "{}", "reason": "r", "received_at": 1.0}'
        await container.upload_blob(old_name, body, metadata={"received_at": repr(day - 86_400)})
        for i in range(30):  # message ids in time order: a listing by them is oldest first
            await storage.deadletters.put(message_id=f"m{i:02d}", text="{}", reason="r",
                                          received_at=day + i)  # fmt: skip
        recent = await storage.deadletters.list(limit=3, scan=10)  # a busy day: 30 > the bound
        assert [d.message_id for d in recent] == ["m27", "m28", "m29"]
        (only,) = await storage.deadletters.list(limit=1, scan=10)
        assert only.message_id == "m29"
        everything = await storage.deadletters.list(limit=100)
        assert "legacy" in [d.message_id for d in everything]
        assert everything[0].message_id == "legacy"  # the oldest first, as always


async def test_a_bounded_dead_letter_scan_returns_the_newest(storage: Storage) -> None:
    # The scan bound is a parameter (the simulation sets it small; issue #30, item 4): a scan
    # of at least ``limit`` names returns the ``limit`` newest of a day holding more than it.
    # (Receive times near the storage's own clock: Azure trusts a name's time only near when
    # storage wrote it, and orders by that write time first, to the second.)
    start = time.time() - 60
    for i in (3, 0, 7, 5, 1, 6, 2, 4):  # written in no time order
        await storage.deadletters.put(message_id=f"m{i}", text="{}", reason="r",
                                      received_at=start + i)  # fmt: skip
    recent = await storage.deadletters.list(limit=3, scan=4)
    assert sorted(d.message_id for d in recent) == ["m5", "m6", "m7"]
    assert len(await storage.deadletters.list(limit=100, scan=2)) == 2  # the bound holds


async def test_dead_letter_names_list_newest_first_within_a_day() -> None:
    at = 1_790_000_000.0
    names = [ResourceNames.deadletter_blob(at + s, f"m{s}") for s in (0.001, 1, 3600, 30_000)]
    assert sorted(names) == names[::-1]
    assert len({name.split("/")[0] for name in names}) == 1  # one day
    assert all(ResourceNames.deadletter_newest_first(name) for name in names)
    assert not ResourceNames.deadletter_newest_first("2026-12-04/7d35e47e-2a5c-4d5e.json")


# -- lease ---------------------------------------------------------------------------------------


async def test_lease_is_exclusive_until_released(storage: Storage) -> None:
    assert await storage.lease.is_held() is False
    first = await storage.lease.acquire(15)
    assert first is not None
    assert await storage.lease.acquire(15) is None
    assert await storage.lease.is_held() is True
    assert await storage.lease.renew(first) is True

    await storage.lease.release(first)
    assert await storage.lease.is_held() is False
    await storage.lease.release(first)  # releasing a lost lease is no error

    second = await storage.lease.acquire(15)
    assert second is not None
    assert await storage.lease.renew(first) is False


async def test_broken_lease_is_lost_and_can_be_taken(storage: Storage) -> None:
    first = await storage.lease.acquire(60)
    assert first is not None
    await storage.lease.break_lease()
    assert await storage.lease.is_held() is False
    assert await storage.lease.renew(first) is False

    second = await storage.lease.acquire(15)
    assert second is not None
    assert second != first
    assert await storage.lease.is_held() is True
    await storage.lease.release(first)  # the old holder's release must not free the new lease
    assert await storage.lease.is_held() is True


async def test_break_without_a_holder_is_harmless(storage: Storage) -> None:
    await storage.lease.break_lease()
    assert await storage.lease.acquire(15) is not None


# -- queues --------------------------------------------------------------------------------------


async def receive_one(queue: Queue, visibility_s: int = 30) -> ReceivedMessage:
    found: list[ReceivedMessage] = []

    async def probe() -> bool:
        found.extend(await queue.receive(1, visibility_s))
        return bool(found)

    await eventually(probe)
    return found[0]


async def test_send_receive_delete(storage: Storage) -> None:
    queue = storage.event_queue
    await queue.send('{"kind": "activate", "workflow_id": "wf1"}')
    message = await receive_one(queue)
    assert message.text == '{"kind": "activate", "workflow_id": "wf1"}'
    assert message.dequeue_count == 1
    assert message.inserted_at is not None
    # Invisible to other consumers while received.
    assert await queue.receive(32, 30) == []
    assert await queue.delete(message) is True
    assert await queue.delete(message) is False  # already gone: no error
    assert await queue.approximate_count() == 0


async def test_a_redelivery_keeps_the_first_insertion_time(storage: Storage) -> None:
    """Workers judge a task message whose state is missing by its age since it was SENT
    (``workflow_check.state_wait_s``): handing it back and receiving it again must not renew it."""
    queue = storage.event_queue
    await queue.send("hello")
    first = await receive_one(queue)
    assert await queue.extend(first, 0) is not None  # handed back, visible at once
    again = await receive_one(queue)
    assert (again.id, again.dequeue_count) == (first.id, 2)
    assert again.inserted_at == first.inserted_at is not None


async def test_text_is_sent_plain(storage: Storage) -> None:
    text = json.dumps({"cmd": "echo '<&>' \"quoted\" ünïcode"})
    await storage.event_queue.send(text)
    assert (await receive_one(storage.event_queue)).text == text


async def test_oversized_message_is_refused(storage: Storage) -> None:
    await storage.event_queue.send("a" * 65536)  # exactly the limit
    with pytest.raises(MessageError, match="too large"):
        await storage.event_queue.send("a" * 65537)
    assert await storage.event_queue.approximate_count() == 1


async def test_extend_gives_a_new_receipt_and_stales_the_old(storage: Storage) -> None:
    queue = storage.event_queue
    await queue.send("m")
    message = await receive_one(queue)
    extended = await queue.extend(message, 30)
    assert extended is not None
    assert extended.id == message.id
    assert extended.text == "m"
    assert extended.pop_receipt != message.pop_receipt
    assert await queue.extend(message, 30) is None
    assert await queue.delete(message) is False
    assert await queue.receive(32, 30) == []  # still invisible
    assert await queue.delete(extended) is True


async def test_extend_zero_makes_visible_again(storage: Storage) -> None:
    queue = storage.event_queue
    await queue.send("m")
    message = await receive_one(queue)
    released = await queue.extend(message, 0)
    assert released is not None
    again = await receive_one(queue)
    assert again.id == message.id
    assert again.dequeue_count == 2
    assert await queue.delete(released) is False  # the second receive took a new receipt
    assert await queue.delete(again) is True


async def test_visibility_timeout_redelivers(storage: Storage) -> None:
    queue = storage.event_queue
    await queue.send("m")
    first = await receive_one(queue, visibility_s=1)
    second = await receive_one(queue)
    assert second.id == first.id
    assert second.dequeue_count == 2
    assert await queue.delete(first) is False
    assert await queue.delete(second) is True


async def test_delayed_send_is_invisible_first(storage: Storage) -> None:
    queue = storage.event_queue
    await queue.send("later", delay_s=2)
    assert await queue.receive(32, 30) == []
    assert (await receive_one(queue)).text == "later"


async def test_receive_more_than_one_service_batch(storage: Storage) -> None:
    queue = storage.queues.get(storage.event_queue.name)
    await asyncio.gather(*(queue.send(f"m{i}") for i in range(40)))
    got: list[ReceivedMessage] = []

    async def probe() -> bool:
        got.extend(await queue.receive(40 - len(got), 30))
        return len(got) >= 40

    await eventually(probe)
    assert sorted(m.text for m in got) == sorted(f"m{i}" for i in range(40))
    assert len({m.id for m in got}) == 40
    assert await queue.receive(5, 30) == []
    assert await queue.approximate_count() == 40


async def test_task_queue_is_created_on_send(storage: Storage, prefix: str) -> None:
    name = f"{prefix}-q-gpu"
    queue = storage.queues.get(name)
    assert storage.queues.get(name) is queue  # handles are cached
    assert await queue.receive(1, 30) == []  # a queue that does not exist yet reads as empty
    assert await queue.approximate_count() == 0
    # A burst of dispatches to the queue that does not exist yet: every message arrives.
    await asyncio.gather(*(queue.send(f"task{i}") for i in range(10)))
    got: list[ReceivedMessage] = []

    async def probe() -> bool:
        got.extend(await queue.receive(10, 30))
        return len(got) >= 10

    await eventually(probe)
    assert sorted(m.text for m in got) == sorted(f"task{i}" for i in range(10))
    await storage.queues.get(f"{prefix}-q-cpu").ensure()
    await storage.queues.get(f"{prefix}-q-cpu").ensure()  # idempotent
    assert await storage.queues.list_names(f"{prefix}-q-") == [f"{prefix}-q-cpu", name]


# -- index ---------------------------------------------------------------------------------------


def row(workflow_id: str, created_at: float, **fields: object) -> IndexRow:
    values: dict[str, object] = {
        "name": "train",
        "status": WorkflowStatus.PENDING,
        "updated_at": created_at,
    }
    values.update(fields)
    return IndexRow(workflow_id=workflow_id, created_at=created_at, **values)  # type: ignore[arg-type]


async def test_index_create_get_and_idempotent_create(storage: Storage) -> None:
    first = row("wf1", 1000.5, total=3, counts={"pending": 3}, queues=["gpu", "cpu"])
    await storage.index.create(first)
    await storage.index.create(row("wf1", 1000.5, name="other"))  # a retried submit leaves it
    assert await storage.index.get("wf1", 1000.5) == first
    assert await storage.index.get("wf1", 2000.0) is None


async def test_project_merges_and_never_clobbers_cancel(storage: Storage) -> None:
    await storage.index.create(row("wf1", 1000.0))
    await storage.index.request_cancel("wf1", 1000.0)
    projected = row(
        "wf1",
        1000.0,
        status=WorkflowStatus.FAILED,
        updated_at=1010.0,
        total=2,
        counts={"completed": 1, "failed": 1},
        queues=["default"],
        run=2,
        error="task b failed",
        finished_at=1010.0,
    )
    await storage.index.project(projected)
    got = await storage.index.get("wf1", 1000.0)
    assert got is not None
    assert got.cancel_requested is True
    assert got == IndexRow(**{**projected.__dict__, "cancel_requested": True})

    await storage.index.clear_cancel("wf1", 1000.0)
    rerun = row("wf1", 1000.0, status=WorkflowStatus.RUNNING, updated_at=1020.0, run=3)
    await storage.index.project(rerun)  # error and finished_at go back to None
    assert await storage.index.get("wf1", 1000.0) == rerun


async def test_project_never_creates_a_row(storage: Storage) -> None:
    """A projection stalled in flight may land after a purge deleted the row: the purged
    workflow's row must stay gone (found by the simulation: docs/simulation.md)."""
    await storage.index.create(row("wf1", 1000.0))
    await storage.index.delete("wf1", 1000.0)  # a purge
    await storage.index.project(row("wf1", 1000.0, status=WorkflowStatus.CANCELLED))
    assert await storage.index.get("wf1", 1000.0) is None


async def test_cancel_flag_needs_a_row(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        await storage.index.request_cancel("nope", 1000.0)
    with pytest.raises(NotFoundError):
        await storage.index.clear_cancel("nope", 1000.0)


async def seven_rows(storage: Storage) -> None:
    statuses = [
        WorkflowStatus.COMPLETED,
        WorkflowStatus.RUNNING,
        WorkflowStatus.FAILED,
        WorkflowStatus.RUNNING,
        WorkflowStatus.PENDING,
        WorkflowStatus.CANCELLING,
        WorkflowStatus.RUNNING,
    ]
    names = ["train", "train-big", "eval", "train", "prep 'x'", "train", "eval"]
    await asyncio.gather(
        *(
            storage.index.create(row(f"wf{i}", 1000.0 + i, name=names[i], status=statuses[i]))
            for i in range(7)
        )
    )


async def test_list_pages_newest_first(storage: Storage) -> None:
    await seven_rows(storage)
    seen: list[str] = []
    continuation: str | None = None
    pages = 0
    while True:
        page = await storage.index.list(limit=3, continuation=continuation)
        assert len(page.rows) <= 3
        seen += [r.workflow_id for r in page.rows]
        pages += 1
        continuation = page.next
        if continuation is None:
            break
        assert pages < 10
    assert seen == [f"wf{i}" for i in range(6, -1, -1)]
    assert pages == 3


async def test_list_filters(storage: Storage) -> None:
    await seven_rows(storage)

    async def ids(**kwargs: object) -> list[str]:
        page = await storage.index.list(**kwargs)  # type: ignore[arg-type]
        assert page.next is None
        return [r.workflow_id for r in page.rows]

    assert await ids(status=WorkflowStatus.RUNNING) == ["wf6", "wf3", "wf1"]
    assert await ids(name_prefix="train") == ["wf5", "wf3", "wf1", "wf0"]
    assert await ids(name_prefix="train-") == ["wf1"]
    assert await ids(name_prefix="prep 'x") == ["wf4"]  # quotes are escaped, not injected
    assert await ids(name_prefix="train", status=WorkflowStatus.RUNNING) == ["wf3", "wf1"]
    assert await ids(status=WorkflowStatus.CANCELLED) == []


async def test_list_filters_page_too(storage: Storage) -> None:
    await seven_rows(storage)
    first = await storage.index.list(name_prefix="train", limit=3)
    assert [r.workflow_id for r in first.rows] == ["wf5", "wf3", "wf1"]
    assert first.next is not None
    second = await storage.index.list(name_prefix="train", limit=3, continuation=first.next)
    assert [r.workflow_id for r in second.rows] == ["wf0"]
    assert second.next is None


@pytest.mark.parametrize("token", ["not base64 ~~~", "bm90IGpzb24", "WzFd"])
async def test_list_rejects_malformed_continuation(storage: Storage, token: str) -> None:
    with pytest.raises(InvalidContinuationError) as info:
        await storage.index.list(continuation=token)
    assert isinstance(info.value, ValueError)
    assert "continuation" in str(info.value)


async def test_active_lists_non_terminal_rows(storage: Storage) -> None:
    await seven_rows(storage)
    active = await storage.index.active()
    assert sorted(r.workflow_id for r in active) == ["wf1", "wf3", "wf4", "wf5", "wf6"]


async def test_active_lists_one_partitions_rows(storage: Storage) -> None:
    await storage.index.create(row("p0", 100.0))
    await storage.index.create(row("p2", 101.0, partition=2))
    await storage.index.create(row("p2done", 102.0, partition=2, status=WorkflowStatus.COMPLETED))
    await storage.index.create(row("p3", 103.0, partition=3))
    assert [r.workflow_id for r in await storage.index.active(2)] == ["p2"]
    assert [r.workflow_id for r in await storage.index.active(0)] == ["p0"]
    assert sorted(r.workflow_id for r in await storage.index.active()) == ["p0", "p2", "p3"]


async def test_project_many_writes_every_row_and_keeps_the_cancel_flag(storage: Storage) -> None:
    """A batch projection (one transaction per 100 rows of the index partition) is the same
    update-merge as ``project``: existing rows change, a cancel flag stays, and a row that is gone
    (purged) is not brought back while the others of its batch are written."""
    from dataclasses import replace as _replace

    base = IndexRow("b000", "batch", WorkflowStatus.PENDING, 1_800_000_000.0, 1_800_000_000.0)
    rows = [
        _replace(base, workflow_id=f"b{i:03d}", created_at=base.created_at + i) for i in range(130)
    ]
    for one in rows:
        await storage.index.create(one)
    await storage.index.request_cancel("b000", rows[0].created_at)
    await storage.index.delete("b007", rows[7].created_at)  # purged meanwhile
    running = [_replace(r, status=WorkflowStatus.RUNNING, total=3) for r in rows]
    await storage.index.project_many(running)
    assert await storage.index.get("b007", rows[7].created_at) is None
    got = await storage.index.get("b000", rows[0].created_at)
    assert got is not None
    assert (got.status, got.total, got.cancel_requested) == (WorkflowStatus.RUNNING, 3, True)
    last = await storage.index.get("b129", rows[129].created_at)
    assert last is not None
    assert last.status is WorkflowStatus.RUNNING


async def test_a_projection_older_than_the_row_is_not_applied(storage: Storage) -> None:
    """A row's version is its state's run and write count; a projection that stalled in flight
    and lands after a newer one changes nothing (found by the simulation, seed 991 with the
    backlog trial: a completed workflow's row said cancelled for good)."""
    await storage.index.create(row("wf1", 1000.0, writes=0))
    done = row("wf1", 1000.0, status=WorkflowStatus.COMPLETED, updated_at=1030.0, writes=5,
               counts={"completed": 2}, finished_at=1030.0)  # fmt: skip
    stale = row("wf1", 1000.0, status=WorkflowStatus.CANCELLING, updated_at=1020.0, writes=4)
    await storage.index.project(done)
    await storage.index.request_cancel("wf1", 1000.0)  # the row changes under the projector
    await storage.index.project(stale)
    await storage.index.project_many([stale])
    got = await storage.index.get("wf1", 1000.0)
    assert got == IndexRow(**{**done.__dict__, "cancel_requested": True})
    rerun = row("wf1", 1000.0, status=WorkflowStatus.RUNNING, updated_at=1040.0, run=2, writes=1)
    await storage.index.project(rerun)  # a later run's first write is newer than any of run 1's
    assert (await storage.index.get("wf1", 1000.0)) == IndexRow(
        **{**rerun.__dict__, "cancel_requested": True}
    )


async def test_a_batch_projection_applies_only_its_newer_rows(storage: Storage) -> None:
    """In a batch, a row older than the stored one is left as stored while the newer rows of the
    batch are written; a row with no version (a state from before write counts) is applied."""
    from dataclasses import replace as _replace

    base = IndexRow("v000", "batch", WorkflowStatus.PENDING, 1_800_000_000.0, 1_800_000_000.0)
    rows = [
        _replace(base, workflow_id=f"v{i:03d}", created_at=base.created_at + i, writes=0)
        for i in range(4)
    ]
    for one in rows:
        await storage.index.create(one)
    newer = [_replace(r, status=WorkflowStatus.COMPLETED, writes=3) for r in rows]
    await storage.index.project_many(newer)
    await storage.index.project_many(newer)  # the same version again: nothing to write
    older = [_replace(r, status=WorkflowStatus.CANCELLED, writes=2) for r in rows[:2]]
    unversioned = _replace(rows[2], status=WorkflowStatus.FAILED, writes=None)
    fresher = _replace(rows[3], status=WorkflowStatus.RUNNING, run=2, writes=1)
    await storage.index.request_cancel("v003", rows[3].created_at)  # written since it was read
    await storage.index.project_many([*older, unversioned, fresher])
    got = [await storage.index.get(r.workflow_id, r.created_at) for r in rows]
    assert got[3] is not None
    assert got[3].cancel_requested
    assert [(g.status if g else None) for g in got] == [
        WorkflowStatus.COMPLETED, WorkflowStatus.COMPLETED, WorkflowStatus.FAILED,
        WorkflowStatus.RUNNING,
    ]  # fmt: skip


@pytest.mark.azurite
async def test_a_forged_dead_letter_neither_stays_most_recent_nor_is_read_whole(
    settings: object,
) -> None:
    # Before: "most recent" was the metadata a writer chose (a forged future received_at kept a
    # letter first for good) and each letter was downloaded whole (64 MiB per doctor run).
    import asyncio

    from shared.settings import Settings
    from shared.storage.factory import ensure_resources, open_storage

    assert isinstance(settings, Settings)
    async with open_storage(settings) as storage:
        assert isinstance(storage, AzureStorage)
        await ensure_resources(storage)
        container = storage.deadletters.container
        now = 1_790_000_000.0
        await container.upload_blob(
            ResourceNames.deadletter_blob(now, "forged"), b"x" * 300_000,
            metadata={"received_at": repr(9e12)},
        )  # fmt: skip
        await asyncio.sleep(1.1)  # the service's clock, to the second, says what came later
        for i in range(2):
            await storage.deadletters.put(message_id=f"real{i}", text="{}", reason="r",
                                          received_at=now + i)  # fmt: skip
        recent = await storage.deadletters.list(limit=2)
        assert sorted(d.message_id for d in recent) == ["real0", "real1"]
        everything = await storage.deadletters.list(limit=10)
        assert sorted(d.message_id for d in everything) == ["real0", "real1"]  # forged: skipped
