"""Cache look-ups are bounded (issue 33 §8): 3,000 cached dispatches of two workflows looked up
together keep at most the dispatcher's concurrency of GETs in flight, and the entries they hold
within the bytes budget — before, every GET started at once, and every blob hit held its output
until its PUT was done."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from shared.caching.entry import CachedFrom, CacheEntry, encode_entry
from shared.caching.key import key_of_task
from shared.coordinator.results import ResultCacheSteps
from shared.definition.workflow import CachePolicy, CompiledWorkflow
from shared.engine.commands import Dispatch
from shared.messages import OutputRef
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import task

ENTRY = 256 * 1024
BUDGET = 4 * ENTRY
HITS = 100


async def _cached_workflow(storage: MemoryStorage, n: int, name: str) -> CompiledWorkflow:
    cache = CachePolicy(version=name)
    wf = CompiledWorkflow.of(name, [task(f"t{i}", cache=cache) for i in range(n)])
    payload = b"x" * ENTRY
    digest = hashlib.sha256(payload).hexdigest()
    for i in range(HITS):  # the first tasks have an entry with a blob output
        key = key_of_task(wf.tasks[i], None)
        assert key is not None
        entry = CacheEntry(
            key=key, origin=CachedFrom(workflow_id="old", task=f"t{i}", attempt=1),
            created_at=1.0, expires_at=1e9, output=OutputRef(size=ENTRY, sha256=digest),
        )  # fmt: skip
        await storage.cache.put(key, encode_entry(entry, payload), 1e9)
    return wf


async def test_lookups_keep_their_concurrency_and_bytes_bounded(
    memory_storage: MemoryStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = await _cached_workflow(memory_storage, 1500, "one")
    two = await _cached_workflow(memory_storage, 1500, "two")
    gets = held = 0
    peak = {"gets": 0, "held": 0}
    real_get, real_put = memory_storage.cache.get, memory_storage.outputs.put

    async def get(key: str) -> bytes | None:
        nonlocal gets, held
        gets += 1
        peak["gets"] = max(peak["gets"], gets)
        await asyncio.sleep(0.001)
        data = await real_get(key)
        gets -= 1
        if data is not None:  # every entry here carries a payload of ENTRY bytes
            held += ENTRY
            peak["held"] = max(peak["held"], held)
        return data

    async def put(name: str, data: bytes, **kwargs: object) -> None:
        nonlocal held
        await asyncio.sleep(0.002)  # the hit's output is written while its entry is held
        await real_put(name, data, **kwargs)  # type: ignore[arg-type]
        held -= len(data)

    monkeypatch.setattr(memory_storage.cache, "get", get)
    monkeypatch.setattr(memory_storage.outputs, "put", put)
    steps = ResultCacheSteps(memory_storage, concurrency=32, max_bytes=BUDGET)
    found = await asyncio.gather(
        steps.lookup_all("wf-one", one, [Dispatch(i, f"t{i}", 1, "cpu") for i in range(1500)], 2.0),
        steps.lookup_all("wf-two", two, [Dispatch(i, f"t{i}", 1, "cpu") for i in range(1500)], 2.0),
    )
    assert [len(hits) for hits in found] == [HITS, HITS]  # the bounds change no answer
    assert peak["gets"] <= 32
    assert peak["held"] <= BUDGET
