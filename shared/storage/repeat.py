"""Repeating a storage call whose connection was lost, and what a repeat's answer means.

A connection can fail before the request reached the server (a pooled connection the server had
just closed: nothing happened) or after (the server acted, the answer was lost). The caller
cannot tell which, so dagq repeats only what its design already tolerates twice, and every port
operation is such a call (``REPEATED``: the rule per operation, also in docs/storage.md). The
adapters run each operation through ``with_repeats`` (the Azure adapters with the SDK's
connection errors, the simulation with its own) and, while ``is_repeat()`` is true, settle the
answers that a first try which took effect would cause:

- a create-only write (definition, state, claim) that finds the blob: if the blob holds exactly
  the bytes (and metadata) this call wrote, the earlier try created it -> created;
- an If-Match state write refused (412): if the state holds exactly these bytes and metadata, the
  earlier try wrote it -> its ETag, as if the reply had arrived (otherwise StaleStateError, which
  the coordinator's CAS loop handles by re-reading, as after any lost reply).

Everything else repeats as it is: a second send is a duplicate message (claims drop it), a
second delete finds nothing, merges and replaces write the same values again.

No Azure import here: the simulation (``sim/storage.py``) models the same rule with this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger("dagq.storage")

DELAYS_S = (0.0, 0.2, 0.4, 0.8)
"""Waits before each repeat: at once first (the next try gets a fresh connection), then the
worker's transient-error backoff (``worker_agent.reporting``), about 1.4 s in all."""

_repeat: ContextVar[bool] = ContextVar("dagq_storage_repeat", default=False)


_call: ContextVar[dict[str, str] | None] = ContextVar("dagq_storage_call", default=None)


def call_state() -> dict[str, str]:
    """Values that last across the tries of the storage call running now (an operation built on
    others shares its own): a lease acquire proposes the same lease id on every try. A fresh
    dict outside ``with_repeats``."""
    state = _call.get()
    return {} if state is None else state


def is_repeat() -> bool:
    """Whether the storage call running now is a repeat (an earlier try may have taken effect)."""
    return _repeat.get()


@contextlib.contextmanager
def repeating() -> Iterator[None]:
    """Run the calls inside as repeats (the contract tests' way to state the settling rules)."""
    token = _repeat.set(True)
    try:
        yield
    finally:
        _repeat.reset(token)


async def with_repeats(
    call_: Callable[[], Awaitable[T]],
    *,
    lost: Callable[[BaseException], bool],
    what: str,
    delays_s: tuple[float, ...] = DELAYS_S,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    jitter: Callable[[], float] = lambda: random.uniform(0.8, 1.2),  # noqa: S311 - not crypto
) -> T:
    """``call_()``, repeated after each exception for which ``lost`` is true (the connection was
    lost, the request may or may not have taken effect), at most ``len(delays_s)`` times; the
    repeats run with ``is_repeat()`` true. An operation built on others repeats its parts
    (each part inside a repeat is a repeat too), and itself when a part gives up."""
    if _call.get() is None:
        call = _call.set({})
        try:
            return await with_repeats(
                call_, lost=lost, what=what, delays_s=delays_s, sleep=sleep, jitter=jitter
            )
        finally:
            _call.reset(call)
    for attempt in range(len(delays_s) + 1):
        token = _repeat.set(_repeat.get() or attempt > 0)
        try:
            return await call_()
        except Exception as exc:
            if not lost(exc) or attempt == len(delays_s):
                raise
            delay = delays_s[attempt] * jitter()
            log.info("%s: connection lost (%s: %s); try %d in %.2f s",
                     what, type(exc).__name__, exc, attempt + 2, delay)  # fmt: skip
        finally:
            _repeat.reset(token)
        await sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


REPEATED: dict[str, str] = {
    # -- workflow blobs --
    "workflows.create_definition": "create-only; a repeat that finds the same bytes created it",
    "workflows.read_definition": "a read",
    "workflows.write_definition": "replaces with the same bytes and metadata",
    "workflows.definition_properties": "a read",
    "workflows.delete_definition": "If-Match; a repeat that finds the blob gone deleted it",
    "workflows.create_state": "create-only; a repeat that finds the same bytes and metadata "
    "created it (the state holds a random incarnation: another submit's differs)",
    "workflows.read_state": "a read",
    "workflows.write_state": "If-Match; a repeat refused with 412 reads back: the same bytes and "
    "metadata mean the first try wrote it (its ETag), else StaleStateError (re-read, re-apply)",
    "workflows.state_metadata": "a read",
    "workflows.state_properties": "a read",
    "workflows.delete": "deletes; If-Match on a blob already gone is no error",
    "workflows.mark_purge": "replaces the marker with the same bytes",
    "workflows.purge_marks": "a read",
    "workflows.unmark_purge": "a delete",
    "workflows.mark_job": "replaces the job's mark with the same time",
    "workflows.job_marks": "a read",
    # -- outputs, cache, dead letters --
    "outputs.put": "replaces with the same bytes",
    "outputs.create_if_absent": "create-only (claims); a repeat that finds the same bytes "
    "created it, so a worker never drops its own claim as another's",
    "outputs.get": "a read",
    "outputs.delete_prefix": "deletes (each repeated on its own; a repeat's 404 counts as deleted)",
    "outputs.append": "append at a position; a repeat whose block landed is recognised by "
    "the blob's size",
    "outputs.read_range": "a read",
    "cache.get": "a read",
    "cache.put": "replaces with the same bytes",
    "cache.expired": "a read",
    "cache.delete": "a delete",
    "deadletters.put": "replaces the same blob (named by day and message id) with the same bytes",
    "deadletters.list": "a read",
    # -- lease --
    "lease.acquire": "proposes the same lease id again: the holder's acquire is renewed",
    "lease.renew": "renews again",
    "lease.release": "a lost lease is no error",
    "lease.break_lease": "breaks again",
    "lease.is_held": "a read",
    # -- queues --
    "queue.ensure": "create-if-absent",
    "queue.send": "a duplicate message: harmless by design (the claim drops a duplicate "
    "dispatch; events apply once, keyed by task and attempt)",
    "queue.receive": "a receive whose answer was lost leaves its messages invisible until "
    "their visibility ends, then they come back (at-least-once)",
    "queue.delete": "a repeat finds the message gone (False, as for a stale receipt)",
    "queue.extend": "a repeat whose first try landed has a stale receipt (None: the holder "
    "lets the message go, as after any lost extension)",
    "queue.approximate_count": "a read",
    "queue.oldest_visible_at": "a read",
    "queues.list_names": "a read",
    # -- index --
    "index.create": "insert; a repeat's 409 leaves the row (the first try's)",
    "index.create_many": "an all-or-nothing batch of inserts; a repeat whose first try landed "
    "finds its rows (ConflictError, nothing written): the caller creates them one by one, each "
    "leaving the row it finds",
    "index.project": "a repeat reads the row's version again: a first try that landed left "
    "it as new as the projection, so nothing more is written",
    "index.project_many": "the same conditional merges again (all-or-nothing batches)",
    "index.request_cancel": "merges the same flag",
    "index.clear_cancel": "merges the same flag",
    "index.get": "a read",
    "index.list": "a read",
    "index.delete": "a delete",
    "index.created_before": "a read",
    "index.active": "a read",
    # -- registry --
    "registry.beat": "an upsert of the same record",
    "registry.remove": "a delete",
    "registry.workers": "a read",
    "registry.note_queues": "upserts of the same rows",
    "registry.queues": "a read",
    "registry.note_failure": "an upsert of the same note",
    "registry.failures": "a read",
    "registry.note_machine": "an upsert of the same row",
    "registry.machines": "a read",
    # -- schedules --
    "schedules.create": "insert; a repeat's 409 is this call's own create when the row holds "
    "exactly this record",
    "schedules.get": "a read",
    "schedules.list": "a read",
    "schedules.update": "If-Match replace; a repeat's 412 is this call's own write when the row "
    "holds exactly this record (else StaleStateError: the caller reads again)",
    "schedules.delete": "a delete (a repeat finds nothing: False)",
}
"""Every port operation -> why repeating it after a lost connection is safe."""
