"""The coordinator applies a control event (activate, cancel, retry) only when the app signed
it: the worker identity may send to the event queues (its completions), so an unsigned or
foreign cancel or retry — one that bypassed the API — is dead-lettered with its reason, and the
workflow goes on. Task messages the coordinator dispatches carry the app's signature."""

from __future__ import annotations

from shared.api import service
from shared.coordinator import Coordinator
from shared.definition.workflow import CompiledWorkflow
from shared.messages import CancelEvent, RetryEvent, decode_task_message, encode
from shared.names import ResourceNames
from shared.signing import Signer, new_key_pair, verifier_of
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fast_options, load, task

NAMES = ResourceNames("mem")
WF = CompiledWorkflow.of("one", [task("a")])
PRIVATE, PUBLIC = new_key_pair()


async def test_only_control_events_the_app_signed_are_applied(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    app = Signer(PRIVATE)
    coordinator = Coordinator(memory_storage, NAMES, fast_options(signing_key=PRIVATE), clock=clock)
    await service.submit(memory_storage, WF, now=clock(), workflow_id="wf1", signer=app)
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.RUNNING

    # The dispatched task message is signed with the app's key.
    [sent] = await memory_storage.queues.get(NAMES.task_queue("cpu")).receive(1, 30)
    verifier = verifier_of(PUBLIC)
    assert verifier is not None
    verifier.check(decode_task_message(sent.text))

    forged = [
        CancelEvent(workflow_id="wf1", reason="forged by a worker"),
        Signer(new_key_pair()[0]).sign(CancelEvent(workflow_id="wf1")),
        app.sign(CancelEvent(workflow_id="wf1")).model_copy(update={"workflow_id": "wf2"}),
        RetryEvent(workflow_id="wf1", run=1),
    ]
    for event in forged:
        await memory_storage.event_queue.send(encode(event))
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status is WorkflowStatus.RUNNING
    reasons = sorted(letter.reason for letter in await memory_storage.deadletters.list())
    assert len(reasons) == 4, reasons
    assert sum("is not signed by the app" in r for r in reasons) == 2, reasons
    assert sum("no key in DAGQ_VERIFY_KEYS made" in r for r in reasons) == 2, reasons

    await service.cancel(memory_storage, "wf1", reason="the user", signer=app)
    await coordinator.run_once()
    assert (await load(memory_storage, WF, "wf1")).status in (
        WorkflowStatus.CANCELLING,
        WorkflowStatus.CANCELLED,
    )
