"""The Scheduled Events watcher on its own: a first answer that comes late, failures retried with
backoff, only an unreachable address turning it off, and off unless configured."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.metadata_service import FakeMetadata, preempt
from worker_agent import preemption
from worker_agent.config import WorkerSettings
from worker_agent.preemption import Notice, PeerLock, PreemptionWatcher, acknowledge


@pytest.fixture
def slow_metadata() -> Iterator[FakeMetadata]:
    fake = FakeMetadata(first_delay_s=2.5)
    fake.events.append(preempt("vm-7"))
    yield fake
    fake.close()


async def watch(watcher: PreemptionWatcher, timeout_s: float = 30) -> list[Notice]:
    notices: list[Notice] = []
    await asyncio.wait_for(watcher.run(notices.append), timeout=timeout_s)
    return notices


async def test_a_first_answer_later_than_the_old_timeout_is_waited_for(
    slow_metadata: FakeMetadata,
) -> None:
    watcher = PreemptionWatcher(slow_metadata.url, poll_s=0.05, vm_name="vm-7")
    assert watcher.first_timeout_s >= 120  # Microsoft: the first call may take two minutes
    (notice,) = await watch(watcher)
    assert notice.event_type == "Preempt"
    assert watcher.answered


async def test_failed_requests_are_retried_until_the_endpoint_answers() -> None:
    fake = FakeMetadata(failures=3)  # 503 three times
    fake.events.append(preempt("vm-7"))
    try:
        (notice,) = await watch(PreemptionWatcher(fake.url, poll_s=0.01, vm_name="vm-7"))
    finally:
        fake.close()
    assert notice.event_id == "evt-vm-7"
    assert sum("scheduledevents" in r["path"] for r in fake.requests) == 4


async def test_a_timeout_is_retried_with_the_long_first_timeout_until_answered() -> None:
    timeouts: list[float] = []
    document = json.dumps({"Events": [preempt("vm-7")]}).encode()

    def fetch(url: str, timeout_s: float) -> bytes:
        timeouts.append(timeout_s)
        if len(timeouts) < 3:
            raise TimeoutError("timed out")
        return document

    watcher = PreemptionWatcher("http://metadata", poll_s=0.01, vm_name="vm-7", fetch=fetch)
    (notice,) = await watch(watcher)
    assert notice.event_type == "Preempt"
    assert timeouts == [preemption.FIRST_TIMEOUT_S] * 3


@pytest.mark.parametrize("code", [errno.ENETUNREACH, errno.EHOSTUNREACH])
async def test_only_an_unreachable_address_turns_the_watcher_off(code: int) -> None:
    calls = 0

    def fetch(url: str, timeout_s: float) -> bytes:
        nonlocal calls
        calls += 1
        raise urllib.error.URLError(OSError(code, "unreachable"))

    assert await watch(PreemptionWatcher("http://metadata", poll_s=0.01, fetch=fetch)) == []
    assert calls == 1


@pytest.mark.parametrize(
    "error",
    [ConnectionRefusedError(errno.ECONNREFUSED, "refused"), TimeoutError("timed out")],
    ids=["refused", "timeout"],
)
async def test_other_errors_keep_the_watcher_on(error: OSError) -> None:
    calls = 0
    loop = asyncio.get_running_loop()
    third = asyncio.Event()

    def fetch(url: str, timeout_s: float) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 3:
            loop.call_soon_threadsafe(third.set)
        raise urllib.error.URLError(error)

    watcher = PreemptionWatcher("http://metadata", poll_s=0.001, fetch=fetch)
    task = asyncio.create_task(watcher.run(lambda notice: None))
    await asyncio.wait_for(third.wait(), timeout=20)
    assert not task.done()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def test_acknowledging_is_on_by_default_and_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert WorkerSettings(queues=["gpu"]).scheduled_events_ack is True
    monkeypatch.setenv("DAGQ_WORKER_SCHEDULED_EVENTS_ACK", "false")
    assert WorkerSettings(queues=["gpu"]).scheduled_events_ack is False


def test_the_watcher_is_off_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGQ_WORKER_SCHEDULED_EVENTS", raising=False)
    assert WorkerSettings(queues=["gpu"]).scheduled_events is False
    monkeypatch.setenv("DAGQ_WORKER_SCHEDULED_EVENTS", "true")
    assert WorkerSettings(queues=["gpu"]).scheduled_events is True


def test_acknowledging_posts_start_requests_with_the_event_id() -> None:
    fake = FakeMetadata()
    try:
        notice = Notice(event_id="evt-42", event_type="Terminate", not_before=None, sole=True)
        assert acknowledge(fake.url, notice) is True
    finally:
        fake.close()
    assert fake.acks == [{"StartRequests": [{"EventId": "evt-42"}]}]
    assert fake.requests[-1]["metadata"] == "true"


def test_a_failed_acknowledgement_is_logged_not_raised() -> None:
    def post(url: str, body: bytes, timeout_s: float) -> None:
        raise urllib.error.URLError("down")

    notice = Notice(event_id="evt-1", event_type="Preempt", not_before=None)
    assert acknowledge("http://metadata", notice, post) is False


def test_only_the_last_agent_of_a_vm_to_stop_acknowledges(tmp_path: Path) -> None:
    gpu, cpu = PeerLock(tmp_path, "vm-7-gpu"), PeerLock(tmp_path, "vm-7-cpu")
    gpu.hold()
    cpu.hold()
    gpu.release()
    assert gpu.others_running()  # cpu is still handing back: it will acknowledge
    cpu.release()
    assert not cpu.others_running()
    crashed = PeerLock(tmp_path, "vm-7-crashed")
    crashed.hold()
    crashed.release()  # as when its process died: its file stays, its lock does not
    assert not gpu.others_running()


def test_a_second_lock_on_the_same_file_is_refused(tmp_path: Path) -> None:
    # Two agents given the same worker id: the second cannot hold the lock (the agent logs it
    # and runs on without one, rather than failing to start).
    first, second = PeerLock(tmp_path, "vm-7"), PeerLock(tmp_path, "vm-7")
    first.hold()
    with pytest.raises(OSError):
        second.hold()
    first.release()


def test_only_an_event_that_names_this_vm_alone_is_acknowledged() -> None:
    # An acknowledgement (StartRequests) releases every VM the event names: an agent that
    # acknowledged a scale-in of three VMs would end two others under their running tasks.
    document = {
        "Events": [
            {"EventId": "many", "EventType": "Terminate", "Resources": ["vm-7", "vm-8", "vm-9"]},
            {"EventId": "none", "EventType": "Preempt", "Resources": []},
            {"EventId": "mine", "EventType": "Preempt", "Resources": ["vm-7"]},
        ]
    }
    notices = {n.event_id: n for n in preemption.parse_notices(document, "vm-7")}
    assert {key: n.sole for key, n in notices.items()} == {
        "many": False,
        "none": False,
        "mine": True,
    }
    assert not any(n.sole for n in preemption.parse_notices(document, None))
    fake = FakeMetadata()
    try:
        assert acknowledge(fake.url, notices["many"]) is False
        assert acknowledge(fake.url, notices["none"]) is False
        assert fake.acks == []  # nothing posted: Azure goes ahead at NotBefore
        assert acknowledge(fake.url, notices["mine"]) is True
    finally:
        fake.close()
    assert fake.acks == [{"StartRequests": [{"EventId": "mine"}]}]


def test_scheduled_events_are_polled_every_second(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Preempt gives 30 s: a 5 s poll spent a sixth of it before the agent even knew.
    monkeypatch.delenv("DAGQ_WORKER_METADATA_POLL_S", raising=False)
    assert WorkerSettings(queues=["gpu"]).metadata_poll_s <= 1.0
