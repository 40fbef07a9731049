"""``dagq doctor`` from stored facts to findings, on the memory fakes AND Azurite: what it reads
is what the checks judge (lost dispatches, unserved queues, stuck events, overdue sweeps, skew)."""

from __future__ import annotations

import time

import pytest

from shared.coordinator import Coordinator
from shared.errors import NotFoundError
from shared.messages import ActivateEvent, encode
from shared.names import ResourceNames
from shared.ops.doctor import doctor
from shared.settings import Settings
from shared.storage.ports import Storage
from tests.coordinator.helpers import diamond, fast_options, submit
from tests.ops.facts import worker


def settings_of(storage: Storage, **env: str) -> Settings:
    names: ResourceNames = storage.names  # type: ignore[attr-defined]
    return Settings.model_validate({"DAGQ_STORAGE": "unused", "DAGQ_PREFIX": names.prefix, **env})


def checks_of(report: object) -> list[tuple[str, str | None]]:
    return [(f.check, f.subject) for f in report.findings]  # type: ignore[attr-defined]


async def test_a_fresh_deployment_only_lacks_its_first_sweep(storage: Storage) -> None:
    now = time.time()
    first = await doctor(storage, settings_of(storage), now=now)
    assert checks_of(first) == [("sweep_overdue", "partition 0")]
    assert first.findings[0].severity == "warning"  # nothing is waiting on it yet
    await storage.workflows.mark_job("sweep", now)
    assert (await doctor(storage, settings_of(storage), now=now)).healthy is True


async def test_queued_work_without_workers_then_a_lost_message(storage: Storage) -> None:
    settings = settings_of(storage)
    names = settings.names
    now = time.time()
    await submit(storage, diamond(), "wf", now)
    await Coordinator(storage, names, fast_options()).run_once()  # task a queued on cpu
    now = time.time()
    await storage.workflows.mark_job("sweep", now)

    report = await doctor(storage, settings, now=now)
    assert checks_of(report) == [("unserved_queue", "cpu"), ("unknown_queue", "cpu")]
    assert report.summary.queue_depths == {"cpu": 1}
    assert report.summary.queued_tasks == 1

    await storage.registry.beat(worker(queues=("cpu",), last_seen=time.time()))
    await storage.registry.note_queues(["cpu"], now)
    assert (await doctor(storage, settings, now=now)).healthy is True

    queue = storage.queues.get(names.task_queue("cpu"))
    [message] = await queue.receive(1, 5)
    await queue.delete(message)  # the task message is lost
    later = await doctor(storage, settings, now=time.time() + 70, workflow_id="wf")
    assert checks_of(later) == [("lost_dispatch", "cpu")]
    assert "wf/a#1" in later.findings[0].detail
    assert later.summary.workflow_status == "running"
    with pytest.raises(NotFoundError):
        await doctor(storage, settings, now=now, workflow_id="no-such")


async def test_events_no_coordinator_applies_and_a_skewed_worker(storage: Storage) -> None:
    settings = settings_of(storage, DAGQ_WORKER_LOST_AFTER_S="600")
    now = time.time()
    await storage.workflows.mark_job("sweep", now + 120)
    await storage.event_queue.send(encode(ActivateEvent(workflow_id="wf")))
    await storage.registry.beat(worker("fast", last_seen=time.time() + 3600))
    report = await doctor(storage, settings, now=now + 120)
    assert checks_of(report) == [
        ("events_without_coordinator", storage.event_queue.name),
        ("clock_skew", "fast"),
    ]
    lease = await storage.lease.acquire(15)
    assert lease is not None
    held = await doctor(storage, settings, now=now + 120)
    assert checks_of(held) == [("clock_skew", "fast")]


@pytest.mark.parametrize(("budget", "value", "note"), [
    ("MAX_TASK_SLOTS", 9, "1 of 3 active workflows were not examined"),  # 4 tasks each
    ("MAX_ACTIVE_READ", 2, "read for the first 2 active workflows only"),
])  # fmt: skip
async def test_a_run_stays_within_its_budgets_and_says_what_it_left_out(
    storage: Storage, monkeypatch: pytest.MonkeyPatch, budget: str, value: int, note: str
) -> None:
    # Before: index.active() was read whole and every running workflow's tasks were decoded
    # (1,000,000 task slots in one call, ~10 s on the coordinator's event loop).
    import shared.ops.doctor_facts as doctor_facts

    monkeypatch.setattr(doctor_facts, budget, value)
    settings = settings_of(storage)
    now = time.time()
    for wid in ("wf1", "wf2", "wf3"):
        await submit(storage, diamond(), wid, now)
    await Coordinator(storage, settings.names, fast_options()).run_once()  # all running
    await storage.workflows.mark_job("sweep", now)
    report = await doctor(storage, settings, now=now)
    partial = [f for f in report.findings if f.check == "partial"]
    assert [f.severity for f in partial] == ["info"]
    assert note in (partial[0].detail or "")
    assert report.summary.queued_tasks == 2  # task a of each examined workflow


async def test_doctor_id_counts_what_the_unfiltered_doctor_counts(storage: Storage) -> None:
    # Issue 20: `dagq doctor ID` said "1 active workflow(s), 1 queued task(s)" on a stack where
    # `dagq doctor` said 3 and 2 — its counts were of the one workflow, under the same words. Now
    # both count the deployment; ID also makes sure that workflow is examined and names its status.
    settings = settings_of(storage)
    now = time.time()
    for wid in ("wf1", "wf2", "wf3"):
        await submit(storage, diamond(), wid, now)
    await Coordinator(storage, settings.names, fast_options()).run_once()  # all running
    await storage.workflows.mark_job("sweep", now)

    everything = await doctor(storage, settings, now=now)
    one = await doctor(storage, settings, now=now, workflow_id="wf2")
    assert everything.summary.workflow_status is None
    assert one.summary.workflow_status == "running"
    assert one.summary.model_dump(exclude={"workflow_status"}) == everything.summary.model_dump(
        exclude={"workflow_status"}
    )
    assert everything.summary.active_workflows == 3
    assert everything.summary.queued_tasks == 3
    assert checks_of(one) == checks_of(everything)


async def test_doctor_id_examines_its_workflow_beyond_the_budgets(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shared.ops.doctor_facts as doctor_facts

    monkeypatch.setattr(doctor_facts, "MAX_EXAMINED", 1)  # the oldest (wf1) only
    settings = settings_of(storage)
    now = time.time()
    for i, wid in enumerate(("wf1", "wf2")):
        await submit(storage, diamond(), wid, now + i)
    await Coordinator(storage, settings.names, fast_options()).run_once()
    await storage.workflows.mark_job("sweep", now)
    queue = storage.queues.get(settings.names.task_queue("cpu"))
    for message in await queue.receive(2, 5):
        await queue.delete(message)  # both task messages are lost

    later = time.time() + 70
    unfiltered = await doctor(storage, settings, now=later)
    assert unfiltered.summary.examined_workflows == 1
    lost = [f for f in unfiltered.findings if f.check == "lost_dispatch"]
    assert "wf1/a#1" in lost[0].detail
    assert "wf2/" not in lost[0].detail
    asked = await doctor(storage, settings, now=later, workflow_id="wf2")
    assert asked.summary.active_workflows == 2
    assert asked.summary.examined_workflows == 2
    lost = [f for f in asked.findings if f.check == "lost_dispatch"]
    assert "wf2/a#1" in lost[0].detail
