"""The coordinator's side of the result cache: answer a dispatch from the cache (a hit), and
record a cached task's successful result after the flush that applied it.

A look-up costs one GET of the entry, plus one PUT when the output was a blob (it becomes this
attempt's own output blob, so everything downstream reads it as if the task had run). Look-ups
run at most ``concurrency`` at once (the dispatcher's, shared by the workflows of a pass) and
within ``LOOKUP_BYTES`` of entries held (``ByteBudget``): 3,000 cached dispatches no longer mean
3,000 GETs in flight and their outputs in memory together. Tasks without ``cache`` cost nothing.
Any storage trouble or a damaged entry is a miss: the task runs (a storage failure is counted and
shown: ``shared.storage.tolerated``).
Recording is best effort (a lost entry is a later miss, never a wrong result); only completed
attempts that really ran are recorded, never failures, never results themselves reused.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from shared.caching.entry import CachedFrom, CacheEntry, decode_entry, encode_entry
from shared.caching.key import key_of_task
from shared.coordinator.blob_reads import read_as_claimed
from shared.coordinator.byte_budget import ByteBudget, Claim
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.commands import Dispatch
from shared.engine.state import COMPLETED, RuntimeState
from shared.errors import CodecError
from shared.messages import OutputRef, TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.ports import OutputBlobs, Storage
from shared.storage.tolerated import TOLERATED, Kind

log = logging.getLogger("dagq.coordinator")

LOOKUP_BYTES = 256 * 1024 * 1024
"""Most bytes of cache entries the look-ups of a coordinator hold at once (``ByteBudget``)."""

_CLAIM: contextvars.ContextVar[Claim] = contextvars.ContextVar("dagq_lookup_claim")
"""The running look-up's share of the bytes budget (each look-up is a task of its own)."""


@dataclass(frozen=True)
class Hit:
    """A dispatch answered from the cache: the completion it stands for, and where from."""

    dispatch: Dispatch
    completion: TaskCompletedEvent
    origin: CachedFrom
    payload: bytes | None = None
    """A blob output's bytes (copied to this attempt's output blob): a ``foreach_from`` list
    source's list is read from them, as from a worker's completion (``lists.cached_list``)."""


class ResultCacheSteps:
    """Look-ups and records against one deployment's cache (``storage.cache``)."""

    def __init__(
        self, storage: Storage, concurrency: int = 32, max_bytes: int = LOOKUP_BYTES
    ) -> None:
        self._storage = storage
        # Shared by every workflow of a pass, like the dispatcher's sends (update.py).
        self._slots = asyncio.Semaphore(concurrency)
        self._bytes = ByteBudget(max_bytes)

    async def lookup_all(
        self, workflow_id: str, wf: CompiledWorkflow, dispatches: list[Dispatch], now: float
    ) -> list[Hit]:
        """The hits among ``dispatches`` (``wf``: the workflow as it runs, with expansions)."""
        wanted = [d for d in dispatches if _looks_up(wf, d)]
        if not wanted:
            return []
        found = await asyncio.gather(*(self._bounded(workflow_id, wf, d, now) for d in wanted))
        return [hit for hit in found if hit is not None]

    async def _bounded(
        self, workflow_id: str, wf: CompiledWorkflow, dispatch: Dispatch, now: float
    ) -> Hit | None:
        """``_lookup`` within the concurrency and the bytes of look-ups at once."""
        async with self._slots, self._bytes.reserve() as claim:
            _CLAIM.set(claim)
            return await self._lookup(workflow_id, wf, dispatch, now)

    async def _get(self, key: str) -> bytes | None:
        """The entry of ``key``, counted against the bytes budget until its look-up ends."""
        data = await self._storage.cache.get(key)
        claim = _CLAIM.get(None)
        if claim is not None:
            self._bytes.resize(claim, len(data or b""))
        return data

    async def _lookup(
        self, workflow_id: str, wf: CompiledWorkflow, dispatch: Dispatch, now: float
    ) -> Hit | None:
        key = key_of_task(wf.tasks[dispatch.task], dispatch.upstream)
        if key is None:
            return None
        try:
            data = await self._get(key)
            if data is None:
                return None
            entry, payload = decode_entry(data, key)
            policy = wf.tasks[dispatch.task].cache
            # This task's own ttl bounds what it reuses too: an entry another workflow recorded
            # with a longer ttl is too old for a task that asked for a shorter one.
            too_old = policy is None or now - entry.created_at > policy.ttl_s
            if entry.expires_at <= now or too_old:
                return None
            output = entry.output
            if payload is not None and output is not None:
                name = ResourceNames.output_blob(
                    workflow_id, dispatch.name, dispatch.attempt, dispatch.blob_incarnation
                )
                await self._storage.outputs.put(name, payload)
                output = OutputRef(blob=name, size=len(payload), sha256=output.sha256)
        except CodecError as exc:
            log.warning("cache entry %s is unusable, the task runs: %s", key, exc)
            return None
        except Exception as exc:  # storage trouble is a miss: running is always correct
            TOLERATED.count(Kind.CACHE_LOOKUP, exc, f"key {key}: the task runs")
            return None
        completion = TaskCompletedEvent(
            workflow_id=workflow_id,
            task=dispatch.name,
            attempt=dispatch.attempt,
            incarnation=dispatch.incarnation,
            started_at=now,
            finished_at=now,
            output=output,
        )
        return Hit(dispatch, completion, entry.origin, payload)

    async def record_all(
        self,
        workflow_id: str,
        wf: CompiledWorkflow,
        state: RuntimeState,
        completions: Iterable[TaskCompletedEvent],
        now: float,
    ) -> int:
        """Record the results of ``completions`` (applied and flushed) of cached tasks that ran;
        return how many entries were written."""
        todo = [c for c in completions if _records(wf, state, c)]
        if not todo:
            return 0
        done = await asyncio.gather(*(self._record(workflow_id, wf, state, c, now) for c in todo))
        return sum(done)

    async def _parents_hold_what_they_claim(self, upstream: dict[str, OutputRef]) -> bool:
        """The key is computed from the parents' blob hashes, which workers claimed: an entry is
        shared by the whole deployment for up to a year, so each parent blob is hashed again
        before one is recorded (one false completion must not poison it)."""
        for name, ref in upstream.items():
            if not await _blob_matches(self._storage.outputs, ref):
                log.warning("not caching: parent %s's output does not hold what it claimed", name)
                return False
        return True

    async def _record(
        self,
        workflow_id: str,
        wf: CompiledWorkflow,
        state: RuntimeState,
        completion: TaskCompletedEvent,
        now: float,
    ) -> bool:
        i = wf.index[completion.task]
        task = wf.tasks[i]
        if not settled_before_dispatch(task):
            return False  # its inputs at dispatch are unknown now: no key it was looked up by
        outputs = state.outputs
        upstream = {wf.tasks[p].name: outputs[p] for p in task.parents if p in outputs}
        key = key_of_task(task, upstream)
        if key is None or task.cache is None:
            return False
        ref, payload = outputs.get(i), None
        try:
            if not await self._parents_hold_what_they_claim(upstream):
                return False
            if ref is not None and ref.blob is not None:
                payload = await read_as_claimed(self._storage.outputs, ref.blob, ref.size)
                ref = OutputRef(size=len(payload), sha256=hashlib.sha256(payload).hexdigest())
            run_s = max(0.0, completion.finished_at - completion.started_at)
            entry = CacheEntry(
                key=key,
                origin=CachedFrom(
                    workflow_id=workflow_id, task=task.name, attempt=completion.attempt, run_s=run_s
                ),
                created_at=now,
                expires_at=now + task.cache.ttl_s,
                output=ref,
            )
            await self._storage.cache.put(key, encode_entry(entry, payload), entry.expires_at)
        except Exception as exc:  # best effort: a lost entry is a later miss
            TOLERATED.count(Kind.CACHE_RECORD, exc, f"key {key}")
            return False
        return True


async def _blob_matches(outputs: OutputBlobs, ref: OutputRef) -> bool:
    """Whether a blob output holds the bytes its event's hash claims (inline ones: nothing to
    check, their value is the key's input itself)."""
    if ref.blob is None:
        return True
    data = await read_as_claimed(outputs, ref.blob, ref.size)
    return ref.sha256 is not None and hashlib.sha256(data).hexdigest() == ref.sha256


def settled_before_dispatch(task: TaskDef) -> bool:
    """Whether every parent of ``task`` had finished when it was dispatched (``all``,
    ``all_settled``), so the parents' outputs now are the ones it received, and the key its
    look-up used is the key computed from them now. With ``any`` or a count it may have started
    on some parents' outputs while others still ran: its result is not recorded (a later run
    that receives every output must not be served a result computed without some)."""
    return task.dep_policy in ("all", "all_settled")


def _looks_up(wf: CompiledWorkflow, dispatch: Dispatch) -> bool:
    policy = wf.tasks[dispatch.task].cache
    return policy is not None and not policy.refresh


def _records(wf: CompiledWorkflow, state: RuntimeState, completion: TaskCompletedEvent) -> bool:
    i = wf.index.get(completion.task)
    if i is None or wf.tasks[i].cache is None:
        return False
    return (
        state.codes[i] == COMPLETED
        and state.attempt[i] == completion.attempt
        and i not in state.cached  # a reused result is not recorded again
    )
