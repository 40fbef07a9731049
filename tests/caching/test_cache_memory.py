"""Result caching through the coordinator, in memory with a fake clock: a second run of a
workflow whose ``cache`` tasks' inputs did not change completes them without dispatching, with
the same outputs downstream; any change in an input (an upstream output, the version) runs them
again; failures are never cached; expired, damaged or unreadable entries are misses; two runs of
one key at once both run and the later success wins."""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior
from shared.caching.entry import decode_entry
from shared.caching.key import key_of_task
from shared.names import ResourceNames
from shared.states import TaskState, WorkflowStatus
from shared.storage.memory import MemoryStorage
from tests.caching.memory_runs import NAMES, pipeline, ran, run, worker
from tests.coordinator.helpers import FakeClock, drive, load, submit


async def test_a_second_run_reuses_cached_results_without_dispatching(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = pipeline()
    first = worker(memory_storage, clock)
    await run(memory_storage, clock, wf, "run1", first)
    assert ran(first) == ["prep", "train", "evaluate"]
    assert len(memory_storage.cache.entries) == 2
    second = worker(memory_storage, clock)
    await run(memory_storage, clock, wf, "run2", second)
    assert ran(second) == ["prep"]  # train and evaluate: no message, no worker
    one, two = await load(memory_storage, wf, "run1"), await load(memory_storage, wf, "run2")
    assert two.status is WorkflowStatus.COMPLETED
    for i in (1, 2):
        view = two.task(i)
        assert view.state is TaskState.COMPLETED
        assert view.cached_from is not None
        assert (view.cached_from.workflow_id, view.cached_from.attempt) == ("run1", 1)
        assert view.cached_from.task == wf.tasks[i].name
    assert two.task(0).cached_from is None
    # Identical outputs downstream: evaluate's inline value, train's blob content (own blob).
    assert two.outputs[2] == one.outputs[2]
    train = two.outputs[1]
    assert train.blob == ResourceNames.output_blob("run2", "train", 1)
    assert await memory_storage.outputs.get(train.blob) == await memory_storage.outputs.get(
        one.outputs[1].blob
    )
    assert train.sha256 == one.outputs[1].sha256


async def test_changed_upstream_content_or_version_runs_again(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await run(memory_storage, clock, pipeline(), "run1", worker(memory_storage, clock))
    changed = worker(memory_storage, clock, prep="data-2")
    await run(memory_storage, clock, pipeline(), "run2", changed)
    # train ran again; its output is the same as before, so evaluate's inputs did not change.
    assert ran(changed) == ["prep", "train"]
    bumped = worker(memory_storage, clock, prep="data-2")
    await run(memory_storage, clock, pipeline(version="2"), "run3", bumped)
    assert ran(bumped) == ["prep", "train", "evaluate"]


async def test_the_prep_command_is_not_a_cached_input_but_its_output_is(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    await run(memory_storage, clock, pipeline(), "run1", worker(memory_storage, clock))
    same_output = worker(memory_storage, clock)
    await run(memory_storage, clock, pipeline(prep_cmd="echo other prep"), "run2", same_output)
    assert ran(same_output) == ["prep"]


async def test_failures_are_never_cached(memory_storage: MemoryStorage, clock: FakeClock) -> None:
    wf = pipeline()
    failing = worker(memory_storage, clock)
    failing.script["train"] = Behavior(always_fail=True)
    await run(memory_storage, clock, wf, "run1", failing)
    assert (await load(memory_storage, wf, "run1")).status is WorkflowStatus.FAILED
    assert memory_storage.cache.entries == {}


async def test_expired_and_damaged_entries_are_misses(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = pipeline(ttl_s=60.0)
    await run(memory_storage, clock, wf, "run1", worker(memory_storage, clock))
    clock.advance(3600)  # past the ttl
    later = worker(memory_storage, clock)
    await run(memory_storage, clock, wf, "run2", later)
    assert ran(later) == ["prep", "train", "evaluate"]
    for key, (data, expires) in list(memory_storage.cache.entries.items()):
        memory_storage.cache.entries[key] = (data[:-5] + b"xxxxx", expires)  # damage the payloads
    damaged = worker(memory_storage, clock)
    await run(memory_storage, clock, wf, "run3", damaged)
    assert "train" in ran(damaged)
    assert (await load(memory_storage, wf, "run3")).status is WorkflowStatus.COMPLETED


async def test_the_same_key_at_once_both_run_and_the_later_success_wins(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    wf = pipeline()
    w = worker(memory_storage, clock)
    await submit(memory_storage, wf, "left", clock())
    await submit(memory_storage, wf, "right", clock())

    async def done() -> bool:
        states = [await load(memory_storage, wf, wid) for wid in ("left", "right")]
        return all(s.status.is_terminal for s in states)

    await drive(memory_storage, NAMES, w, done, clock=clock)
    assert sorted(ran(w)) == sorted(["prep", "train", "evaluate"] * 2)
    last = max((e for e in w.history if e.message.task == "train"), key=w.history.index)
    right = await load(memory_storage, wf, last.message.workflow_id)
    key = key_of_task(wf.tasks[1], {"prep": right.outputs[0]})
    assert key is not None
    entry, _ = decode_entry(memory_storage.cache.entries[key][0], key)
    assert entry.origin.workflow_id in ("left", "right")
    assert all(s is None for s in [right.task(1).cached_from])
