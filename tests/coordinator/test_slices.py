"""Issue 11 §1: the coordinator never spends more than a bounded slice of a pass on one workflow;
a workflow that exceeds it is set aside (counted, logged with its id) and the others proceed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from shared import engine
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.engine.state import RuntimeState
from shared.messages import ActivateEvent, Event, encode
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from shared.storage.ports import StoredState
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
SLICE = fast_options(workflow_slice_s=0.5)


async def test_a_workflow_whose_storage_hangs_is_set_aside(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    await submit(memory_storage, diamond(), "slow", clock())
    await submit(memory_storage, diamond(), "quick", clock())
    real = memory_storage.workflows.read_state
    never = asyncio.Event()

    async def read_state(workflow_id: str) -> StoredState:
        if workflow_id == "slow":
            await never.wait()  # a blob read that never answers
        return await real(workflow_id)

    monkeypatch.setattr(memory_storage.workflows, "read_state", read_state)
    coord = Coordinator(memory_storage, NAMES, SLICE, clock=clock)
    # Before: the pass waited on the slow workflow forever (this wait_for is only the test's
    # own guard against hanging).
    result = await asyncio.wait_for(coord.run_once(), timeout=60)
    assert (result.stats.workflows_set_aside, result.stats.events_applied) == (1, 1)
    assert "workflow slow: set aside after 0.5 s loading it" in caplog.text
    assert (await load(memory_storage, diamond(), "quick")).status is WorkflowStatus.RUNNING
    assert memory_storage.event_queue.peek_texts() == [encode(ActivateEvent(workflow_id="slow"))]

    monkeypatch.setattr(memory_storage.workflows, "read_state", real)  # the storage recovers
    clock.advance(SLICE.event_visibility_s + 1)
    assert (await coord.run_once()).stats.events_applied == 1
    assert (await load(memory_storage, diamond(), "slow")).status is WorkflowStatus.RUNNING


async def test_a_workflow_whose_events_are_slow_to_apply_is_cut_short(
    memory_storage: MemoryStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    await submit(memory_storage, diamond(), "slow", clock())
    for _ in range(3):  # three more activations: each one costs more than the slice
        await memory_storage.event_queue.send(encode(ActivateEvent(workflow_id="slow")))
    real = engine.apply

    def slow_apply(
        wf: CompiledWorkflow, state: RuntimeState, event: Event, now: float, **kw: Any
    ) -> object:
        time.sleep(0.6)  # CPU the event loop cannot take back
        return real(wf, state, event, now, **kw)

    monkeypatch.setattr(engine, "apply", slow_apply)
    coord = Coordinator(memory_storage, NAMES, SLICE, clock=clock)
    result = await coord.run_once()
    assert result.stats.workflows_set_aside >= 1
    assert result.stats.events_applied < 4
    assert (await load(memory_storage, diamond(), "slow")).status is WorkflowStatus.RUNNING
    assert len(memory_storage.event_queue.peek_texts()) == 4 - result.stats.events_applied
