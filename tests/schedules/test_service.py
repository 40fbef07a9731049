"""The schedule operations and the sweep's concurrency rules, over the memory fakes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.api import schedules
from shared.api.schedule_sweep import finish_and_delete, run_schedules
from shared.definition.schedule import run_id
from shared.errors import (
    ConflictError,
    DefinitionError,
    IncompleteSubmitError,
    NotFoundError,
    RequestError,
)
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from shared.storage.schedules import ScheduleRecord, ScheduleSpec

DEFINITION = "name: n\ntasks:\n  - name: a\n    kwargs:\n      cmd: echo a\n"
T0 = 1_796_000_000.0  # 2026-11-29 00:53:20 UTC
URLS = {"url_for": lambda n: f"/s/{n}", "workflow_url": lambda w: f"/w/{w}"}


def spec(**changes: object) -> ScheduleSpec:
    base = ScheduleSpec(name="every", cron="* * * * *", definition=DEFINITION)
    return replace(base, **changes)  # type: ignore[arg-type]


def test_bad_input_is_a_400_naming_each_problem() -> None:
    with pytest.raises(RequestError) as caught:
        schedules.check_spec(spec(name="a/b", cron="61 * * * *", timezone="Mars/Base"))
    assert caught.value.http_status == 400
    detail = str(caught.value)
    assert "invalid schedule name" in detail
    assert "invalid cron" in detail
    assert "unknown time zone 'Mars/Base'" in detail
    with pytest.raises(DefinitionError):
        schedules.check_spec(spec(definition="name: n\ntasks: 3\n"))


async def test_create_is_idempotent_and_a_different_spec_conflicts() -> None:
    storage = memory_storage()
    _, created = await schedules.create(storage, spec(), now=T0)
    assert created
    _, created = await schedules.create(storage, spec(), now=T0 + 5)
    assert not created
    with pytest.raises(ConflictError):
        await schedules.create(storage, spec(cron="0 2 * * *"), now=T0)
    with pytest.raises(NotFoundError):
        await schedules.show(storage, "nope", now=T0, **URLS)  # type: ignore[arg-type]


async def test_a_paused_schedule_starts_nothing_and_resume_skips_the_pause() -> None:
    storage = memory_storage()
    await schedules.create(storage, spec(catch_up=5), now=T0)
    await schedules.set_paused(storage, "every", True, now=T0 + 10)
    view = await schedules.show(storage, "every", now=T0 + 10, **URLS)  # type: ignore[arg-type]
    assert view.paused
    assert view.next_runs == []
    assert await run_schedules(storage, T0 + 600) == 0
    await schedules.set_paused(storage, "every", False, now=T0 + 600)
    assert await run_schedules(storage, T0 + 600) == 0  # the pause's slots are not caught up
    assert await run_schedules(storage, T0 + 690) == 1  # one slot since the resume
    view = await schedules.show(storage, "every", now=T0 + 690, **URLS)  # type: ignore[arg-type]
    assert [r.status for r in view.runs] == [WorkflowStatus.PENDING]
    assert len(view.next_runs) == 3
    assert view.next_runs[0] > T0 + 690


async def test_forbid_skips_a_slot_while_the_previous_run_is_active() -> None:
    storage = memory_storage()
    await schedules.create(storage, spec(concurrency="forbid"), now=T0)
    assert await run_schedules(storage, T0 + 60) == 1
    assert await run_schedules(storage, T0 + 120) == 0  # the first is still pending: skipped
    record = await storage.schedules.get("every")
    assert record is not None
    assert record.note
    assert "skipped" in record.note
    assert len(record.runs) == 1


async def test_replace_cancels_the_previous_run_first() -> None:
    storage = memory_storage()
    await schedules.create(storage, spec(concurrency="replace"), now=T0)
    assert await run_schedules(storage, T0 + 60) == 1
    assert await run_schedules(storage, T0 + 120) == 1
    record = await storage.schedules.get("every")
    assert record is not None
    assert len(record.runs) == 2
    first = record.runs[0]
    page = await storage.index.list(limit=10)
    flags = {row.workflow_id: row.cancel_requested for row in page.rows}
    assert flags == {first: True, record.runs[1]: False}


async def test_a_slot_whose_id_holds_another_workflow_is_noted_and_passed_over() -> None:
    storage = memory_storage()
    await schedules.create(storage, spec(catch_up=2), now=T0)
    slot = (int(T0 // 60) + 1) * 60.0
    from shared.api import service

    other = "name: other\ntasks:\n  - name: b\n    kwargs:\n      cmd: echo b\n"
    wf, encoded = service.compile_definition(other)
    await service.submit(storage, wf, now=T0, workflow_id=run_id("every", slot), encoded=encoded)
    assert await run_schedules(storage, slot + 61) == 1  # the next slot still starts
    record = await storage.schedules.get("every")
    assert record is not None
    assert record.note
    assert "not started" in record.note
    assert record.runs == [run_id("every", slot + 60)]


PARAMS = """
name: nightly
params:
  lr: 0.1
  checkpoint: {description: which checkpoint}
tasks:
  - name: train
    kwargs: {cmd: "train --lr {{ params.lr }} --ckpt {{ params.checkpoint }}"}
"""


async def test_a_run_gets_the_schedules_params_and_webhooks() -> None:
    from shared.codec.definition import decode_definition

    storage = memory_storage()
    scheduled = spec(
        definition=PARAMS, params={"checkpoint": "ckpt-42", "lr": "0.01"},
        notify=["https://hooks.example.com/dagq"],
    )  # fmt: skip
    schedules.check_spec(scheduled)
    await schedules.create(storage, scheduled, now=T0)
    assert await run_schedules(storage, T0 + 60) == 1
    [run] = (await storage.schedules.get("every")).runs  # type: ignore[union-attr]
    wf = decode_definition(await storage.workflows.read_definition(run))
    assert wf.params == {"checkpoint": "ckpt-42", "lr": 0.01}
    assert [t.url for t in wf.notify] == ["https://hooks.example.com/dagq"]
    assert "--lr 0.01 --ckpt ckpt-42" in wf.tasks[0].cmd


def test_params_are_checked_as_each_run_will_be() -> None:
    with pytest.raises(DefinitionError) as caught:
        schedules.check_spec(spec(definition=PARAMS, params={"lr": "fast"}))
    assert "checkpoint" in str(caught.value)  # required, not given
    assert "number parameter" in str(caught.value)
    with pytest.raises(DefinitionError):
        schedules.check_spec(spec(definition=PARAMS, params={"checkpoint": "c", "nope": "1"}))


async def test_forbid_sees_a_run_whose_slot_a_killed_sweep_did_not_note() -> None:
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(concurrency="forbid"), now=T0)
    # The sweep submits the first slot's run and dies before it notes it on the schedule (its
    # first update, the run id noted as starting, went through).
    await run_schedules(killed(storage, "schedules", "update", after=1), T0 + 60)
    record = await storage.schedules.get("every")
    assert record is not None
    assert record.runs == []
    # The next slot: the unnoted run is still pending, so forbid skips the slot.
    assert await run_schedules(storage, T0 + 120) == 0
    record = await storage.schedules.get("every")
    assert record is not None
    assert record.note is not None
    assert "skipped" in record.note


async def test_a_run_left_half_made_is_finished_by_the_next_sweep_though_paused() -> None:
    # Simulation seed 125: a sweep's submit created the run's state, then failed before its
    # index row and activate event; the user paused the schedule before the next sweep, which
    # skips paused schedules, so nobody submitted the id again: a pending run no sweep sees.
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(), now=T0)
    assert await run_schedules(killed(storage, "index", "create"), T0 + 60) == 0
    first = run_id("every", 1_796_000_040.0)
    await storage.workflows.read_state(first)  # the state was created...
    assert [r for r in storage.index.rows.values() if r.workflow_id == first] == []  # ...no row
    await schedules.set_paused(storage, "every", True, now=T0 + 70)
    await run_schedules(storage, T0 + 80)
    rows = [r for r in storage.index.rows.values() if r.workflow_id == first]
    assert [r.status for r in rows] == [WorkflowStatus.PENDING]
    assert len(await storage.event_queue.receive(32, 30)) == 1  # its activate event
    record = await storage.schedules.get("every")
    assert record is not None
    assert record.starting == []


async def test_a_run_left_half_made_is_finished_when_its_slot_left_the_catch_up() -> None:
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(), now=T0)
    await run_schedules(killed(storage, "index", "create"), T0 + 60)
    first = run_id("every", 1_796_000_040.0)
    await run_schedules(storage, T0 + 200)  # catch_up 1: the latest slot only is due
    rows = [r for r in storage.index.rows.values() if r.workflow_id == first]
    assert [r.status for r in rows] == [WorkflowStatus.PENDING]


async def test_a_delete_finishes_a_run_left_half_made_first() -> None:
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(), now=T0)
    await run_schedules(killed(storage, "index", "create"), T0 + 60)
    first = run_id("every", 1_796_000_040.0)
    with pytest.raises(IncompleteSubmitError):  # a storage failure fails the delete
        await finish_and_delete(killed(storage, "index", "create"), "every", now=T0 + 70)
    assert await storage.schedules.get("every") is not None
    assert (await finish_and_delete(storage, "every", now=T0 + 70)).deleted
    rows = [r for r in storage.index.rows.values() if r.workflow_id == first]
    assert [r.status for r in rows] == [WorkflowStatus.PENDING]


async def test_a_start_a_sweep_notes_while_a_delete_runs_is_finished_by_the_delete() -> None:
    # Before: the delete read the schedule, a sweep noted a new start and died before its submit,
    # and the delete removed the schedule anyway: a half-made run nobody would finish.
    storage = memory_storage()
    await schedules.create(storage, spec(), now=T0)
    late = run_id("every", 1_796_000_040.0)
    real_get = storage.schedules.get
    reads = 0

    async def get(name: str) -> ScheduleRecord | None:
        nonlocal reads
        record = await real_get(name)
        reads += 1
        if reads == 1 and record is not None:  # the sweep's note lands after the delete's read
            await storage.schedules.update(replace(record, starting=[late]))
        return record

    storage.schedules.get = get  # type: ignore[method-assign]
    assert (await finish_and_delete(storage, "every", now=T0 + 70)).deleted
    assert await real_get("every") is None
    assert (await storage.workflows.state_metadata(late))["status"] == WorkflowStatus.PENDING


async def test_a_run_its_sweep_has_not_seen_through_is_neither_purged_nor_started_again() -> None:
    # Simulation seed 677: a sweep's submit created the run and failed before its index row (its
    # id left in ``starting``); a user cancelled it (the cancel wrote the row) and purged it; the
    # next sweep submitted the id again and started the slot a second time.
    from shared.api import service
    from shared.coordinator import Coordinator
    from shared.ops.purge import purge_workflow
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(), now=T0)
    await run_schedules(killed(storage, "index", "create"), T0 + 60)
    first = run_id("every", 1_796_000_040.0)
    await service.cancel(storage, first, reason="by hand")
    await Coordinator(storage, storage.names).run_once()
    with pytest.raises(ConflictError, match="schedule"):
        await purge_workflow(storage, first)
    await run_schedules(storage, T0 + 65)  # the sweep sees the start through
    await purge_workflow(storage, first)
    await run_schedules(storage, T0 + 70)
    with pytest.raises(NotFoundError):
        await storage.workflows.state_metadata(first)  # the slot was not started again


@pytest.mark.parametrize("concurrency", ["forbid", "replace"])
async def test_a_run_finished_from_starting_is_the_previous_run_of_the_later_slots(
    concurrency: str,
) -> None:
    # Simulation seed 3709840 (a soak): a sweep was killed after the run of slot 1 was created
    # (listed in `starting`, not yet among the runs noted). The next sweep finished it from
    # `starting` and skipped slot 2 under forbid (slot 1's run was the slot before); the sweep
    # after looked for slot 2's run (none) and the latest run noted (not slot 1's: finishing it
    # from `starting` did not note it), found nothing active, and started slot 3 while slot 1's
    # run was still pending: two runs at once under forbid (and no cancel under replace).
    from tests.schedules.killed import killed

    storage = memory_storage()
    await schedules.create(storage, spec(concurrency=concurrency), now=T0)
    await run_schedules(killed(storage, "index", "create"), T0 + 60)
    first = run_id("every", 1_796_000_040.0)
    await run_schedules(storage, T0 + 120)  # finishes slot 1's run; slot 2 against it
    third = run_id("every", 1_796_000_160.0)
    await run_schedules(storage, T0 + 180)
    record = await storage.schedules.get("every")
    assert record is not None
    assert first in record.runs
    if concurrency == "forbid":
        with pytest.raises(NotFoundError):
            await storage.workflows.read_state(third)
        assert record.note is not None
        assert f"{first} was still pending" in record.note
    else:
        (row,) = [r for r in storage.index.rows.values() if r.workflow_id == first]
        assert row.cancel_requested  # slot 2 replaced it
        await storage.workflows.read_state(third)


async def test_a_scheduled_run_s_plain_roots_are_sent_by_its_submit() -> None:
    # Before: the sweep's submits went through activation (an activate event and its pass).
    from shared.messages import decode_task_message
    from shared.names import ResourceNames

    storage = memory_storage()
    names = ResourceNames("mem")
    await schedules.create(storage, spec(), now=T0)
    assert await run_schedules(storage, T0 + 60, names=names) == 1
    [run] = (await storage.schedules.get("every")).runs  # type: ignore[union-attr]
    assert (await storage.workflows.state_metadata(run))["status"] == WorkflowStatus.RUNNING
    assert storage.event_queue.peek_texts() == []  # no activate event
    sent = storage.queues.get(names.task_queue("default")).peek_texts()
    assert [decode_task_message(t).key for t in sent] == [f"{run}/a/1"]
