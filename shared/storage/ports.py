"""The interfaces between dagq's logic and its storage, one method per storage operation.

The coordinator, the API service layer and the worker are written against these Protocols only.
``shared.storage.azure`` implement them with the async Azure SDKs (Azurite locally; built by
``shared.storage.factory.open_storage``); ``shared.storage.memory`` implements them in memory.
``tests/storage/test_contract.py`` runs the same tests against both, so the fake cannot drift from
the real thing.

Every method is a coroutine; errors are dagq's (``shared.errors``), never SDK exceptions, except for
transient transport failures which propagate so callers can retry or let the queue redeliver. A
call whose connection was lost is repeated by the adapter first (``shared.storage.repeat``: every
operation here is safe to repeat, and ``REPEATED`` says why).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from shared.index_row import IndexRow
from shared.limits import CACHE_SCAN
from shared.storage.index_ports import Index, IndexPage
from shared.storage.queue_ports import Queue, Queues, ReceivedMessage
from shared.storage.registry import Registry
from shared.storage.schedules import Schedules

__all__ = [
    "Index",
    "IndexPage",
    "IndexRow",
    "Queue",
    "Queues",
    "ReceivedMessage",
    "StoredState",
]  # re-exported: the row is the core's (shared.engine.projection), stored here

# -- blobs ---------------------------------------------------------------------------------------


class StoredState(NamedTuple):
    """A state blob as one download returns it: bytes, ETag and metadata of the same version."""

    data: bytes
    etag: str
    metadata: dict[str, str]
    """What the writer recorded beside the bytes (status, partition: ``shared.codec``,
    ``shared.deployment``); the download's response headers carry it, so it costs no request."""


class PurgeMark(NamedTuple):
    """What a purge marker keeps of the workflow being purged, for a purge that finishes it
    after its state blob is gone."""

    created_at: float
    """Its creation time (finds its index row)."""
    incarnation: int | None = None
    """Its incarnation (None: a workflow from before incarnations, or a marker written by a
    dagq from before markers kept it)."""
    incarnation_blobs: bool = False
    """Its attempt blobs are named under the incarnation (``RuntimeState.incarnation_blobs``)."""

    @property
    def blob_incarnation(self) -> int | None:
        """The incarnation that names its attempt blobs (None: the flat layout)."""
        return self.incarnation if self.incarnation_blobs else None


class WorkflowBlobs(Protocol):
    """Definition blobs (create-only) and state blobs (create-only, then ETag CAS) of workflows."""

    async def create_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None = None
    ) -> bool:
        """Create the definition blob if absent, as ``incarnation``'s (kept in its metadata). True
        if created; False if one already existed."""
        ...

    async def write_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None
    ) -> None:
        """Create or replace the definition blob as ``incarnation``'s: a submit that relied on a
        definition another incarnation wrote makes it its own once its state exists."""
        ...

    async def definition_properties(self, workflow_id: str) -> tuple[int | None, str]:
        """The incarnation the definition blob was written for (None: by a dagq from before
        they were kept) and its ETag, from one HEAD. Raises NotFoundError."""
        ...

    async def delete_definition(self, workflow_id: str, etag: str) -> bool:
        """Delete the definition blob while it is still at ``etag`` (If-Match): False if it
        changed (another incarnation's now) or is gone."""
        ...

    async def read_definition(self, workflow_id: str) -> bytes:
        """The definition blob's bytes. Raises NotFoundError."""
        ...

    async def create_state(self, workflow_id: str, data: bytes, metadata: dict[str, str]) -> str:
        """Create the state blob (If-None-Match: *); return its ETag. Raises ConflictError if it
        exists already."""
        ...

    async def read_state(self, workflow_id: str) -> StoredState:
        """The state blob's bytes, ETag and metadata, from one GET. Raises NotFoundError."""
        ...

    async def write_state(
        self, workflow_id: str, data: bytes, etag: str, metadata: dict[str, str]
    ) -> str:
        """Replace the state blob if its ETag is still ``etag`` (If-Match); return the new ETag.
        Raises StaleStateError on a mismatch (412) and NotFoundError if it vanished. Never a blind
        overwrite."""
        ...

    async def state_metadata(self, workflow_id: str) -> dict[str, str]:
        """The state blob's metadata only (one HEAD): workers read ``status`` from it to notice a
        cancelled workflow. Raises NotFoundError."""
        ...

    async def state_properties(self, workflow_id: str) -> tuple[dict[str, str], str]:
        """The state blob's metadata and its ETag, from one HEAD (so that the status they say and
        the ETag belong to the same version). Raises NotFoundError."""
        ...

    async def delete(
        self, workflow_id: str, etag: str | None = None, *, definition: bool = True
    ) -> None:
        """Delete the state blob, then (``definition``) the definition blob; missing ones are no
        error. With ``etag``, the state blob only while it is still at that ETag (If-Match): if
        it changed, StaleStateError and nothing is deleted."""
        ...

    async def mark_purge(self, workflow_id: str, mark: PurgeMark) -> None:
        """Write the purge marker of a workflow (``shared.names`` ``purge_marker_blob``): a purge
        interrupted after this point is found and finished by the next one."""
        ...

    async def purge_marks(self, limit: int = 1000) -> dict[str, PurgeMark]:
        """Workflows with a purge marker (purges begun and not finished) -> what it keeps."""
        ...

    async def unmark_purge(self, workflow_id: str) -> None:
        """Delete the purge marker (the last step of a purge); no error if it is gone."""
        ...

    async def mark_job(self, job: str, at: float) -> None:
        """Record that the recurring job ``job`` (``sweep``) ran at ``at`` (``shared.names``
        ``job_mark_blob``: here, where only the app writes)."""
        ...

    async def job_marks(self) -> dict[str, float]:
        """Job name -> when it last ran (bounded: ``MAX_JOB_MARKS``; unreadable marks skipped)."""
        ...


class OutputBlobs(Protocol):
    """The outputs container: large outputs, logs, upstream bundles, attempt claims."""

    async def put(self, name: str, data: bytes, *, content_type: str = "application/json") -> None:
        """Create or replace a blob."""
        ...

    async def create_if_absent(self, name: str, data: bytes) -> bool:
        """Create a blob only if it does not exist (If-None-Match: *). True if this call created
        it."""
        ...

    async def get(self, name: str) -> bytes:
        """A blob's bytes. Raises NotFoundError."""
        ...

    async def delete_prefix(self, prefix: str, *, segments: int | None = None) -> int:
        """Delete every blob whose name starts with ``prefix`` (an incarnation's ``{id}/{inc}/``)
        — with ``segments``, only those whose name has that many '/'-separated segments (the
        flat layout's, ``ResourceNames.FLAT_SEGMENTS``); return how many were deleted.
        Idempotent."""
        ...

    async def append(
        self, name: str, data: bytes, *, at: int, content_type: str, create: bool = False
    ) -> None:
        """Append ``data`` to the append blob ``name``, whose length is ``at``; ``create`` makes
        (or empties) the blob first (``at`` is then 0). A retried call is harmless. Raises
        ConflictError when the blob holds something else at ``at``."""
        ...

    async def read_range(self, name: str, start: int, max_bytes: int) -> tuple[bytes, int]:
        """Up to ``max_bytes`` of a blob from byte ``start`` (none past its end), and its whole
        size. Raises NotFoundError."""
        ...


class ResultCache(Protocol):
    """The result cache container: one entry blob per cache key (``shared.caching.entry``), each
    with its expiry in its metadata so a sweep finds expired entries from a listing alone."""

    async def get(self, key: str) -> bytes | None:
        """An entry's bytes, or None if there is none (one GET)."""
        ...

    async def put(self, key: str, data: bytes, expires_at: float) -> None:
        """Create or replace an entry (the later success wins)."""
        ...

    async def expired(
        self, now: float, limit: int = 1000, *, start: int = 0, scan: int = CACHE_SCAN
    ) -> builtins.list[str]:
        """Keys of up to ``limit`` entries whose expiry is before ``now``, among at most ``scan``
        entries listed in key order from the two-hex-digit prefix ``start`` (0-255) on, wrapping
        around: a bounded scan, whatever the container holds."""
        ...

    async def delete(self, key: str) -> None:
        """Delete an entry; no error if it is gone."""
        ...


class DeadLetters(Protocol):
    """Events that could not be applied, each kept with its reason (never dropped silently)."""

    async def put(self, *, message_id: str, text: str, reason: str, received_at: float) -> str:
        """Store one dead letter; return where it was stored (blob name)."""
        ...

    async def list(self, limit: int = 100, *, scan: int | None = None) -> list[DeadLetter]:
        """The most recent dead letters, oldest first within the returned page, among at most
        ``scan`` names listed (None: ``shared.limits.DEAD_LETTER_SCAN``), newest day first and
        newest first within a day (``ResourceNames.deadletter_blob``): a bounded scan that
        returns the ``limit`` newest, not a sample, whenever ``scan >= limit``."""
        ...


@dataclass(frozen=True)
class DeadLetter:
    """One event kept aside, with why."""

    name: str
    message_id: str
    text: str
    reason: str
    received_at: float


# -- lease ---------------------------------------------------------------------------------------


class Lease(Protocol):
    """The coordinator's singleton lease on the sentinel blob of a prefix."""

    async def acquire(self, duration_s: int) -> str | None:
        """Take the lease; return its id, or None if another holder has it (409)."""
        ...

    async def renew(self, lease_id: str) -> bool:
        """Renew a held lease. False if it was lost (expired and taken, or broken)."""
        ...

    async def release(self, lease_id: str) -> None:
        """Give the lease up (no error if it was already lost)."""
        ...

    async def break_lease(self) -> None:
        """Break whatever lease is held (operator action, and fault injection in tests)."""
        ...

    async def is_held(self) -> bool:
        """Whether some coordinator holds the lease now (for /api/health)."""
        ...


# -- everything together -------------------------------------------------------------------------


@dataclass(frozen=True)
class Storage:
    """All adapters of one deployment (one prefix), as the coordinator and the API use them.

    ``event_queue``, ``event_poison_queue`` and ``lease`` are those of one partition,
    ``partition`` (0 unless the Storage came from ``for_partition``).
    """

    workflows: WorkflowBlobs
    outputs: OutputBlobs
    deadletters: DeadLetters
    lease: Lease
    queues: Queues
    index: Index
    event_queue: Queue
    event_poison_queue: Queue
    registry: Registry
    """Worker heartbeats, queues ever polled, recurring jobs' last runs (in the index table)."""
    cache: ResultCache
    """Entries of the result cache (``cache:`` tasks)."""
    schedules: Schedules
    """The schedules (``dagq schedule``), in the app's own table."""
    partition: int = field(default=0, kw_only=True)

    def for_partition(self, partition: int) -> Storage:
        """This storage with ``partition``'s event queue, poison queue and lease (no I/O)."""
        if partition == self.partition:
            return self
        raise NotImplementedError(f"{type(self).__name__} has no partition views")


PORTS: dict[str, type] = {
    "workflows": WorkflowBlobs,
    "outputs": OutputBlobs,
    "cache": ResultCache,
    "deadletters": DeadLetters,
    "lease": Lease,
    "queue": Queue,
    "queues": Queues,
    "index": Index,
    "registry": Registry,
    "schedules": Schedules,
}
"""Each port by the name the storage layers key their per-method tables by (the permission
layer's REST operations, the repeat rules)."""
