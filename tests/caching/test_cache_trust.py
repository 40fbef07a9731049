"""The result cache never serves a wrong answer (issue 37 items 9-11):

- a task's own ttl bounds the entries it reuses, whoever recorded them with a longer one;
- a task that may start before all its parents finished (``dep_policy: any`` or a count) is not
  recorded: its inputs at dispatch, which its key must be of, are not known afterwards;
- a blob a worker named is read at the size its event claimed, never more, and refused when it
  holds another number of bytes (recording an entry, expanding a ``foreach_from`` list).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.coordinator.blob_reads import read_as_claimed
from shared.definition.workflow import CachePolicy, CompiledWorkflow
from shared.errors import SizeMismatchError
from shared.storage.memory import MemoryStorage
from shared.storage.ports import Storage
from tests.caching.memory_runs import pipeline, ran, run, worker
from tests.coordinator.helpers import FakeClock, task


async def test_a_task_reuses_nothing_older_than_its_own_ttl(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Before: a ttl 1h task got a 48-hour-old result recorded by another workflow with ttl 365d.
    first = worker(memory_storage, clock)
    await run(memory_storage, clock, pipeline(ttl_s=365 * 86400.0), "long", first)
    clock.advance(48 * 3600)
    short = worker(memory_storage, clock)
    await run(memory_storage, clock, pipeline(ttl_s=3600.0), "short", short)
    assert ran(short) == ["prep", "train", "evaluate"]
    again = worker(memory_storage, clock)
    await run(memory_storage, clock, pipeline(ttl_s=365 * 86400.0), "long-again", again)
    assert ran(again) == ["prep"]  # the long ttl still reuses (the short run re-recorded)


async def test_a_task_that_may_start_before_its_parents_finish_is_not_recorded(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Before: its entry was keyed by the parents' outputs at completion, not the ones it got.
    cache = CachePolicy(ttl_s=86400.0)
    tasks = [
        task("a"),
        task("b"),
        replace(task("join", (0, 1), cache=cache), dep_policy="any"),
    ]
    wf = CompiledWorkflow.of("any", tasks)
    for wid in ("one", "two"):
        w = worker(memory_storage, clock)
        await run(memory_storage, clock, wf, wid, w)
        assert "join" in ran(w)
    assert memory_storage.cache.entries == {}


@pytest.mark.parametrize(("written", "claimed"), [(b"x" * 100, 10), (b"x" * 10, 100)])
async def test_a_named_blob_is_read_at_its_claimed_size_or_refused(
    memory_storage: Storage, written: bytes, claimed: int
) -> None:
    await memory_storage.outputs.put("wf/t/1/output.json", written)
    with pytest.raises(SizeMismatchError, match=f"holds {len(written)} bytes; its event said"):
        await read_as_claimed(memory_storage.outputs, "wf/t/1/output.json", claimed)
    assert (
        await read_as_claimed(memory_storage.outputs, "wf/t/1/output.json", len(written)) == written
    )


async def test_an_entry_is_recorded_only_when_parent_blobs_hold_what_they_claimed(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Before: the key trusted the hash a worker claimed for a parent's blob output; one false
    # completion could poison a deployment-wide entry for up to a year.
    from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
    from tests.caching.memory_runs import BIG, NAMES
    from tests.coordinator.helpers import drive, load, submit

    cache = CachePolicy(ttl_s=86400.0)
    wf = CompiledWorkflow.of("p", [task("prep"), task("train", (0,), cache=cache)])
    script = {"prep": Behavior(output={"data": BIG}), "train": Behavior(output={"w": 1})}
    w = SyntheticWorker(memory_storage, NAMES, ["cpu"], script=script, clock=clock)
    await submit(memory_storage, wf, "forged", clock())
    prep_blob = NAMES.output_blob("forged", "prep", 1)

    async def tamper(_coordinator: object) -> None:
        blobs = memory_storage.outputs.container.blobs
        if prep_blob in blobs:  # the same size, other bytes: not what prep's event hashed
            data = await memory_storage.outputs.get(prep_blob)
            await memory_storage.outputs.put(prep_blob, data.replace(b"x", b"y"))

    async def done() -> bool:
        return (await load(memory_storage, wf, "forged")).status.is_terminal

    await drive(memory_storage, NAMES, w, done, clock=clock, on_pass=tamper)
    assert "train" in ran(w)
    assert memory_storage.cache.entries == {}


async def test_a_cached_list_source_fans_out_as_after_a_run(
    memory_storage: MemoryStorage, clock: FakeClock
) -> None:
    # Before: a cache hit on a foreach_from list source whose output is a blob gave the engine no
    # list (lists are read from workers' completions), and the expansion failed the task.
    from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
    from shared.definition.compiler import compile_text
    from shared.states import WorkflowStatus
    from tests.caching.memory_runs import NAMES
    from tests.coordinator.helpers import load

    wf = compile_text(
        """
name: fan
default_queue: cpu
tasks:
  - name: shards
    cache: true
    kwargs: {cmd: list}
  - name: each
    depends_on: [shards]
    foreach_from: inputs.shards.items
    kwargs: {cmd: "work {{ item }}"}
"""
    )
    items = [f"shard-{i:04d}-" + "x" * 40 for i in range(120)]  # over 4 KiB: a blob output
    script = {"shards": Behavior(output={"items": items})}
    for wid in ("one", "two"):
        w = SyntheticWorker(memory_storage, NAMES, ["cpu"], script=script, clock=clock)
        await run(memory_storage, clock, wf, wid, w)
        state = await load(memory_storage, wf, wid)
        assert state.status is WorkflowStatus.COMPLETED, wid
        ran_each = [name for name in ran(w) if name.startswith("each")]
        assert len(ran_each) == 120, (wid, ran(w)[:5])
    assert "shards" not in ran(w)  # the second run's list came from the cache
