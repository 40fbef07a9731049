"""Issue 11 §1: inline outputs are bounded where they enter the state (DAGQ_INLINE_OUTPUT_BYTES
per output, DAGQ_STATE_INLINE_BYTES per workflow state); the rest move to the outputs container
under their conventional names."""

from __future__ import annotations

import json

from shared.coordinator import Coordinator
from shared.messages import TaskCompletedEvent, encode
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, fan, fast_options, load, submit

NAMES = ResourceNames("mem")


def done(task: str, output: object, size: int = 1) -> str:
    # Sent as raw JSON: a buggy or hostile worker, not ours, which would upload a large output.
    event = {
        "kind": "completed", "workflow_id": "wf1", "task": task, "attempt": 1,
        "started_at": 1.0, "finished_at": 2.0, "output": {"inline": output, "size": size},
    }  # fmt: skip
    return json.dumps(event)


async def fanned_out(
    storage: MemoryStorage, clock: FakeClock, n: int, **options: int
) -> Coordinator:
    await submit(storage, fan(n), "wf1", clock())
    coord = Coordinator(storage, NAMES, fast_options(**options), clock=clock)
    await coord.run_once()
    root = TaskCompletedEvent(workflow_id="wf1", task="root", attempt=1, started_at=1.0,
                              finished_at=2.0)  # fmt: skip
    await storage.event_queue.send(encode(root))
    await coord.run_once()
    return coord


async def test_an_oversized_inline_output_is_moved_to_its_blob(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await fanned_out(memory_storage, clock, 1)
    big = "x" * 6000  # over the 4 KiB inline limit
    await memory_storage.event_queue.send(done("leaf00000", big))
    result = await coord.run_once()
    assert result.stats.outputs_spilled == 1
    ref = (await load(memory_storage, fan(1), "wf1")).task(1).output
    assert ref is not None
    assert (ref.inline, ref.blob, ref.size) == (
        None,
        ResourceNames.output_blob("wf1", "leaf00000", 1),
        6002,
    )
    assert (
        json.loads(
            await memory_storage.outputs.get(ResourceNames.output_blob("wf1", "leaf00000", 1))
        )
        == big
    )


async def test_the_state_holds_at_most_its_inline_budget(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Before: 20,000 tasks x 3.9 KB inline made a 58.8 MB state blob, rewritten on every flush.
    n = 40
    coord = await fanned_out(memory_storage, clock, n, state_inline_bytes=16 * 1024)
    for i in range(n):
        await memory_storage.event_queue.send(done(f"leaf{i:05d}", "y" * 3900))
    result = await coord.run_once()
    assert result.stats.events_applied == n
    state = await load(memory_storage, fan(n), "wf1")
    refs = [state.task(i).output for i in range(1, n + 1)]
    inline = [ref for ref in refs if ref is not None and ref.blob is None]
    assert len(inline) == 4  # 4 x 3902 bytes fit 16 KiB, the fifth would not
    assert sum(ref.size for ref in inline) <= 16 * 1024
    data = (await memory_storage.workflows.read_state("wf1")).data
    assert len(data) < 40 * 1024  # every inline output verbatim would be over 156 KB
    assert state.task(n + 1).state is TaskState.QUEUED  # the sink is dispatched as usual
    assert state.status is WorkflowStatus.RUNNING


async def test_an_inline_output_is_recorded_with_its_true_size(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await fanned_out(memory_storage, clock, 1)
    await memory_storage.event_queue.send(done("leaf00000", {"k": "v" * 100}, size=1))
    await coord.run_once()
    ref = (await load(memory_storage, fan(1), "wf1")).task(1).output
    assert ref is not None
    assert (ref.inline, ref.size) == ({"k": "v" * 100}, 108)  # {"k":"v...v"}


async def test_an_output_cannot_be_both_inline_and_a_blob(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    coord = await fanned_out(memory_storage, clock, 1)
    event = json.loads(done("leaf00000", 1))
    event["output"]["blob"] = NAMES.output_blob("wf1", "leaf00000", 1)
    await memory_storage.event_queue.send(json.dumps(event))
    await coord.run_once()
    (letter,) = await memory_storage.deadletters.list()
    assert "an output is either inline or in a blob, not both" in letter.reason
