"""The submit dispatches a new workflow's plain roots itself (issue 32, ``api.root_dispatch``):
task messages first, exactly as the coordinator would have sent them, then the state created
running with the roots queued; no activate event. Anything else still goes through activation.
(The worker's side, a root taken before its state exists: tests/worker/test_missing_state.py.)"""

from __future__ import annotations

import base64

import pytest

from shared.api import service
from shared.api.root_dispatch import MAX_SUBMIT_ROOTS, plain_roots
from shared.codec.metadata import incarnation_from_metadata, status_from_metadata
from shared.codec.state import decode_state
from shared.coordinator.dispatch import message_text
from shared.definition.compiler import compile_text
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Dispatch
from shared.errors import IncompleteSubmitError
from shared.messages import ActivateEvent, decode_event
from shared.names import ResourceNames
from shared.signing import Signer
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage, memory_storage
from shared.storage.ports import Storage

NAMES = ResourceNames("roots")
NOW = 1_800_000_000.0
SIGNER = Signer(base64.b64encode(bytes(range(32))).decode())

PLAIN = """
name: plain
default_queue: cpu
tasks:
  - {name: a, kwargs: {cmd: "echo a"}}
  - {name: z, kwargs: {cmd: "echo z"}, queue: gpu}
  - {name: b, kwargs: {cmd: "echo b"}, depends_on: [a, z]}
"""


async def task_texts(storage: Storage, queue: str = "cpu") -> list[str]:
    return [m.text for m in await storage.queues.get(NAMES.task_queue(queue)).receive(32, 30)]


async def activate_events(storage: Storage) -> list[object]:
    return [decode_event(m.text) for m in await storage.event_queue.receive(32, 30)]


async def test_plain_roots_are_sent_by_the_submit_and_the_state_created_running() -> None:
    storage = memory_storage("roots")
    wf = compile_text(PLAIN)
    result = await service.submit(
        storage, wf, now=NOW, workflow_id="w1", incarnation=7, signer=SIGNER, names=NAMES
    )
    assert (result.created, result.status) == (True, WorkflowStatus.RUNNING)
    stored = await storage.workflows.read_state("w1")
    assert status_from_metadata(stored.metadata) is WorkflowStatus.RUNNING
    assert incarnation_from_metadata(stored.metadata) == 7
    state = decode_state(stored.data, wf)
    assert [state.state_of(i) for i in range(3)] == ["queued", "queued", "pending"]
    assert (state.attempt[0], state.attempt[1], state.run) == (1, 1, 1)
    row = await storage.index.get("w1", state.created_at)
    assert row is not None
    assert row.status is WorkflowStatus.RUNNING
    assert await activate_events(storage) == []  # no activation: nothing for a pass to do
    # Byte for byte the coordinator's message (same builder, signed with the app's key).
    for name, queue in (("a", "cpu"), ("z", "gpu")):
        task = wf.index[name]
        dispatch = Dispatch(task, name, 1, queue, incarnation=7, run=1, incarnation_blobs=True)
        assert await task_texts(storage, queue) == [message_text("w1", wf, dispatch, 0, SIGNER)]


async def test_the_roots_are_sent_before_the_state_is_created() -> None:
    """Dispatch before the write, as the coordinator does: a crash in between leaves an orphan
    message, never a state whose queued roots were never sent."""
    storage = memory_storage("roots")
    create_state = storage.workflows.create_state
    queued_at_create: list[int] = []

    async def watching(workflow_id: str, data: bytes, metadata: dict[str, str]) -> None:
        cpu = storage.queues.get(NAMES.task_queue("cpu"))
        queued_at_create.append(await cpu.approximate_count())
        await create_state(workflow_id, data, metadata)

    storage.workflows.create_state = watching  # type: ignore[method-assign]
    await service.submit(storage, compile_text(PLAIN), now=NOW, workflow_id="w1", names=NAMES)
    assert queued_at_create == [1]


async def test_a_failed_send_writes_nothing_more_and_the_retry_activates() -> None:
    storage = memory_storage("roots")
    wf = compile_text(PLAIN)
    gpu = storage.queues.get(NAMES.task_queue("gpu"))

    async def down(text: str, *, delay_s: float = 0.0) -> None:
        raise ConnectionError("queue service unreachable")

    gpu.send = down  # type: ignore[method-assign]
    with pytest.raises(IncompleteSubmitError):
        await service.submit(storage, wf, now=NOW, workflow_id="w1", incarnation=1, names=NAMES)
    assert ResourceNames.state_blob("w1") not in storage.workflows.container.blobs
    assert (await storage.index.list()).rows == []
    assert await activate_events(storage) == []
    orphans = await task_texts(storage)  # a's message went out: an orphan, which workers drop

    del gpu.send  # the user submits again: the definition is there, so it is not created now
    again = await service.submit(storage, wf, now=NOW, workflow_id="w1", incarnation=2, names=NAMES)
    assert (again.created, again.status) == (False, WorkflowStatus.PENDING)
    assert await activate_events(storage) == [ActivateEvent(workflow_id="w1")]
    assert len(orphans) == 1
    assert '"incarnation":1' in orphans[0]
    stored = await storage.workflows.state_metadata("w1")
    assert incarnation_from_metadata(stored) == 2  # the orphan is of another incarnation


async def test_a_crash_between_the_sends_and_the_state_leaves_orphans_of_no_workflow() -> None:
    """Workers drop them once old (tests/worker/test_missing_state.py)."""
    storage = memory_storage("roots")
    wf = compile_text(PLAIN)

    async def crash(workflow_id: str, data: bytes, metadata: dict[str, str]) -> None:
        raise ConnectionError("the API process died here")

    storage.workflows.create_state = crash  # type: ignore[method-assign]
    with pytest.raises(IncompleteSubmitError):
        await service.submit(storage, wf, now=NOW, workflow_id="w1", incarnation=1, names=NAMES)
    assert len(await task_texts(storage)) == 1
    assert len(await task_texts(storage, "gpu")) == 1
    assert await activate_events(storage) == []
    assert (await storage.index.list()).rows == []


async def test_losing_the_create_race_sends_activate_for_the_winner() -> None:
    """The definition blob is created (a purge of the id's previous workflow deleted it) but the
    state exists: the submit's messages are of an incarnation that never was (workers dead-letter
    them as another incarnation's) and the existing workflow is answered as before."""
    storage = memory_storage("roots")
    wf = compile_text(PLAIN)
    await service.submit(storage, wf, now=NOW, workflow_id="w1", incarnation=1)
    del storage.workflows.container.blobs[ResourceNames.definition_blob("w1")]
    await activate_events(storage)  # the first submit's
    result = await service.submit(
        storage, wf, now=NOW, workflow_id="w1", incarnation=2, names=NAMES
    )
    assert (result.created, result.status) == (True, WorkflowStatus.PENDING)
    assert incarnation_from_metadata(await storage.workflows.state_metadata("w1")) == 1
    assert '"incarnation":2' in (await task_texts(storage))[0]


ROOT_A = '{name: a, kwargs: {cmd: "echo a"}}'
NOT_PLAIN = {
    "a cached root": PLAIN.replace(ROOT_A, ROOT_A[:-1] + ", cache: true}"),
    "more roots than max_parallelism": PLAIN.replace("name: plain", "name: p\nmax_parallelism: 1"),
    "more roots than the submit sends": "name: wide\ntasks:\n" + "".join(
        f'  - {{name: r{i}, kwargs: {{cmd: "echo"}}}}\n' for i in range(MAX_SUBMIT_ROOTS + 1)
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NOT_PLAIN))
async def test_roots_that_are_not_plain_go_through_activation(case: str) -> None:
    storage = memory_storage("roots")
    wf = compile_text(NOT_PLAIN[case])
    assert not plain_roots(wf)
    result = await service.submit(storage, wf, now=NOW, workflow_id="w1", names=NAMES)
    assert result.status is WorkflowStatus.PENDING
    assert await activate_events(storage) == [ActivateEvent(workflow_id="w1")]
    assert await task_texts(storage) == []
    assert await task_texts(storage, "gpu") == []


async def test_without_names_the_submit_activates_as_before() -> None:
    storage: MemoryStorage = memory_storage("roots")
    wf: CompiledWorkflow = compile_text(PLAIN)
    assert plain_roots(wf)
    result = await service.submit(storage, wf, now=NOW, workflow_id="w1")
    assert result.status is WorkflowStatus.PENDING
    assert await activate_events(storage) == [ActivateEvent(workflow_id="w1")]
