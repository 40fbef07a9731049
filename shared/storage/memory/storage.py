"""In-memory implementations of every storage port, faithful to Azure Storage's semantics.

For fast tests of the coordinator, the API and the worker. They behave like the Azure adapters
(``tests/storage/test_contract.py`` runs the same tests against both): ETag compare-and-swap with
StaleStateError, create-only blobs, queue visibility timeouts and pop receipts (a NEW receipt on
every receive and extend; a stale receipt makes delete return False and extend return None),
delayed sends, dequeue counts, a lease that refuses a second holder, expires and can be broken,
and an index whose projections never clobber ``cancel_requested``.

Time comes from an injectable ``clock`` (seconds, like ``time.time``), so tests can move time on
instead of sleeping: pass a callable reading a variable you advance.

Nothing here is thread-safe or shared between processes; one event loop owns a ``MemoryStorage``.
"""

from __future__ import annotations

import builtins
import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from shared.errors import (
    ConflictError,
    LeaseError,
    MessageError,
    NotFoundError,
    StaleStateError,
)
from shared.limits import MAX_INDEX_ERROR_CHARS, MAX_MESSAGE_BYTES, MAX_VISIBILITY_S
from shared.names import ResourceNames, index_row_key
from shared.states import WorkflowStatus
from shared.storage.encoding import (
    MAX_PAGE,
    created_before_key,
    dead_letter_from_json,
    dead_letter_json,
    decode_continuation,
    encode_continuation,
    purge_marker_created_at,
    purge_marker_json,
)
from shared.storage.memory.registry import MemoryRegistry
from shared.storage.ports import (
    DeadLetter,
    IndexPage,
    IndexRow,
    ReceivedMessage,
    Storage,
)

Clock = Callable[[], float]


_etags = itertools.count(1)


def too_large(queue: str, text: str) -> MessageError:
    """The error for a message the queue service refuses for its size."""
    return MessageError(
        f"message of {len(text.encode())} bytes is too large for queue {queue!r} (the limit is "
        f"{MAX_MESSAGE_BYTES} bytes): send large payloads as blobs and reference them"
    )


def _new_etag() -> str:
    # Shaped like Azure's ETags; unique within the process, so two writes never share one.
    return f'"0x{next(_etags):X}"'


# -- blobs ---------------------------------------------------------------------------------------


@dataclass
class MemoryBlob:
    """One stored blob."""

    data: bytes
    etag: str
    metadata: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/octet-stream"


@dataclass
class MemoryContainer:
    """A blob container: name -> blob."""

    name: str
    blobs: dict[str, MemoryBlob] = field(default_factory=dict)

    def create_if_absent(
        self, name: str, data: bytes, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> MemoryBlob | None:  # fmt: skip
        """Store a new blob; None if one exists already (If-None-Match: *)."""
        if name in self.blobs:
            return None
        blob = MemoryBlob(bytes(data), _new_etag(), dict(metadata or {}), content_type)
        self.blobs[name] = blob
        return blob

    def put(
        self, name: str, data: bytes, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> MemoryBlob:  # fmt: skip
        """Create or replace a blob."""
        blob = MemoryBlob(bytes(data), _new_etag(), dict(metadata or {}), content_type)
        self.blobs[name] = blob
        return blob

    def get(self, name: str, what: str = "blob") -> MemoryBlob:
        try:
            return self.blobs[name]
        except KeyError:
            raise NotFoundError(f"{what} {name!r} not found in container {self.name!r}") from None


class MemoryWorkflowBlobs:
    """WorkflowBlobs over a MemoryContainer."""

    def __init__(self, container: MemoryContainer) -> None:
        self.container = container

    async def create_definition(self, workflow_id: str, data: bytes) -> bool:
        name = ResourceNames.definition_blob(workflow_id)
        return self.container.create_if_absent(name, data) is not None

    async def read_definition(self, workflow_id: str) -> bytes:
        name = ResourceNames.definition_blob(workflow_id)
        return self.container.get(name, f"definition of workflow {workflow_id!r}:").data

    async def create_state(self, workflow_id: str, data: bytes, metadata: dict[str, str]) -> str:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.create_if_absent(name, data, metadata=metadata)
        if blob is None:
            raise ConflictError(f"the state of workflow {workflow_id!r} exists already")
        return blob.etag

    async def read_state(self, workflow_id: str) -> tuple[bytes, str]:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.get(name, f"state of workflow {workflow_id!r}:")
        return blob.data, blob.etag

    async def write_state(
        self, workflow_id: str, data: bytes, etag: str, metadata: dict[str, str]
    ) -> str:
        name = ResourceNames.state_blob(workflow_id)
        current = self.container.get(name, f"state of workflow {workflow_id!r}:")
        if current.etag != etag:
            raise StaleStateError(
                f"the state of workflow {workflow_id!r} changed since it was read "
                f"(ETag {etag} is now {current.etag}): re-read and re-apply"
            )
        return self.container.put(name, data, metadata=metadata).etag

    async def state_metadata(self, workflow_id: str) -> dict[str, str]:
        return (await self.state_properties(workflow_id))[0]

    async def state_properties(self, workflow_id: str) -> tuple[dict[str, str], str]:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.get(name, f"state of workflow {workflow_id!r}:")
        return dict(blob.metadata), blob.etag

    async def delete(self, workflow_id: str, etag: str | None = None) -> None:
        state = self.container.blobs.get(ResourceNames.state_blob(workflow_id))
        if state is not None and etag is not None and state.etag != etag:
            raise StaleStateError(
                f"the state of workflow {workflow_id!r} changed since it was read "
                f"(ETag {etag} is now {state.etag}): it was not deleted"
            )
        self.container.blobs.pop(ResourceNames.state_blob(workflow_id), None)
        self.container.blobs.pop(ResourceNames.definition_blob(workflow_id), None)

    async def mark_purge(self, workflow_id: str, created_at: float) -> None:
        body = purge_marker_json(created_at)
        self.container.put(ResourceNames.purge_marker_blob(workflow_id), body)

    async def purge_marks(self, limit: int = 1000) -> dict[str, float]:
        prefix = ResourceNames.PURGE_MARKER_PREFIX
        names = sorted(n for n in self.container.blobs if n.startswith(prefix))[: max(limit, 0)]
        return {
            n.removeprefix(prefix): purge_marker_created_at(self.container.blobs[n].data)
            for n in names
        }

    async def unmark_purge(self, workflow_id: str) -> None:
        self.container.blobs.pop(ResourceNames.purge_marker_blob(workflow_id), None)


class MemoryOutputBlobs:
    """OutputBlobs over a MemoryContainer."""

    def __init__(self, container: MemoryContainer) -> None:
        self.container = container

    async def put(self, name: str, data: bytes, *, content_type: str = "application/json") -> None:
        self.container.put(name, data, content_type=content_type)

    async def create_if_absent(self, name: str, data: bytes) -> bool:
        return self.container.create_if_absent(name, data) is not None

    async def get(self, name: str) -> bytes:
        return self.container.get(name, "output blob").data

    async def append(
        self, name: str, data: bytes, *, at: int, content_type: str, create: bool = False
    ) -> None:
        blob = self.container.blobs.get(name)
        if create:
            blob = self.container.put(name, b"", content_type=content_type)
        elif blob is None:
            raise NotFoundError(f"append blob {name!r} not found")
        if len(blob.data) == at + len(data) and blob.data.endswith(data):
            return  # a retried append that landed already
        if len(blob.data) != at:
            raise ConflictError(f"append blob {name!r} holds {len(blob.data)} bytes, not {at}")
        blob.data += data
        blob.etag = _new_etag()

    async def read_range(self, name: str, start: int, max_bytes: int) -> tuple[bytes, int]:
        data = self.container.get(name, "output blob").data
        return data[start : start + max_bytes], len(data)

    async def delete_prefix(self, prefix: str) -> int:
        doomed = [name for name in self.container.blobs if name.startswith(prefix)]
        for name in doomed:
            del self.container.blobs[name]
        return len(doomed)


class MemoryDeadLetters:
    """DeadLetters over a MemoryContainer, stored as the Azure adapter stores them (JSON blobs)."""

    def __init__(self, container: MemoryContainer) -> None:
        self.container = container

    async def put(self, *, message_id: str, text: str, reason: str, received_at: float) -> str:
        name = ResourceNames.deadletter_blob(received_at, message_id)
        body = dead_letter_json(message_id, text, reason, received_at)
        self.container.put(name, body, content_type="application/json")
        return name

    async def list(self, limit: int = 100) -> builtins.list[DeadLetter]:
        letters = [
            dead_letter_from_json(name, blob.data) for name, blob in self.container.blobs.items()
        ]
        letters.sort(key=lambda letter: (letter.received_at, letter.name))
        return letters[-limit:] if limit > 0 else []


# -- lease ---------------------------------------------------------------------------------------


def check_lease_duration(duration_s: int) -> None:
    """Azure accepts 15-60 seconds, or -1 for an infinite lease."""
    if duration_s != -1 and not 15 <= duration_s <= 60:
        raise LeaseError(f"lease duration {duration_s}s is invalid: use 15-60 seconds, or -1")


class MemoryLease:
    """The sentinel blob's lease: one holder at a time, expiry by the clock, break at once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lease_id: str | None = None
        self.duration_s = 0
        self.expires_at: float | None = None
        """None with a lease_id: an infinite lease."""
        self.broken = False

    def _active(self) -> bool:
        if self.lease_id is None or self.broken:
            return False
        return self.expires_at is None or self.clock() < self.expires_at

    def _until(self, duration_s: int) -> float | None:
        return None if duration_s == -1 else self.clock() + duration_s

    async def acquire(self, duration_s: int) -> str | None:
        check_lease_duration(duration_s)
        if self._active():
            return None
        self.lease_id = str(uuid.uuid4())
        self.broken = False
        self.duration_s = duration_s
        self.expires_at = self._until(duration_s)
        return self.lease_id

    async def renew(self, lease_id: str) -> bool:
        # Azure renews an expired lease too, as long as nobody took it since; never a broken one.
        if self.lease_id != lease_id or self.broken:
            return False
        self.expires_at = self._until(self.duration_s)
        return True

    async def release(self, lease_id: str) -> None:
        if self.lease_id == lease_id:
            self.lease_id = None
            self.expires_at = None
            self.broken = False

    async def break_lease(self) -> None:
        if self.lease_id is not None:
            self.broken = True

    async def is_held(self) -> bool:
        return self._active()


# -- queues --------------------------------------------------------------------------------------


@dataclass
class _StoredMessage:
    id: str
    text: str
    visible_at: float
    inserted_at: float
    pop_receipt: str | None = None
    dequeue_count: int = 0


@dataclass
class MemoryQueueState:
    """The messages of one queue, in insertion order."""

    name: str
    messages: dict[str, _StoredMessage] = field(default_factory=dict)


class MemoryQueue:
    """A Queue handle over the shared queue states of a MemoryQueues.

    Like the Azure adapter: a send to a missing queue creates it; receive, count and delete on a
    missing queue see an empty queue.
    """

    def __init__(self, queues: MemoryQueues, name: str) -> None:
        self._queues = queues
        self.name = name

    @property
    def _state(self) -> MemoryQueueState | None:
        return self._queues.states.get(self.name)

    async def ensure(self) -> None:
        self._queues.states.setdefault(self.name, MemoryQueueState(self.name))

    async def send(self, text: str, *, delay_s: float = 0.0) -> None:
        if len(text.encode()) > MAX_MESSAGE_BYTES:
            raise too_large(self.name, text)
        await self.ensure()
        state = self._queues.states[self.name]
        now = self._queues.clock()
        delay = min(max(delay_s, 0.0), MAX_VISIBILITY_S)
        message = _StoredMessage(str(uuid.uuid4()), text, visible_at=now + delay, inserted_at=now)
        state.messages[message.id] = message

    async def receive(self, max_messages: int, visibility_s: int) -> list[ReceivedMessage]:
        state = self._state
        if state is None or max_messages <= 0:
            return []
        now = self._queues.clock()
        taken: list[ReceivedMessage] = []
        for message in state.messages.values():
            if len(taken) >= max_messages:
                break
            if message.visible_at > now:
                continue
            # Azure requires at least 1 s on receive (0 is only valid when extending).
            message.visible_at = now + min(max(visibility_s, 1), MAX_VISIBILITY_S)
            message.pop_receipt = uuid.uuid4().hex
            message.dequeue_count += 1
            taken.append(self._received(message))
        return taken

    @staticmethod
    def _received(message: _StoredMessage) -> ReceivedMessage:
        assert message.pop_receipt is not None
        return ReceivedMessage(
            id=message.id,
            pop_receipt=message.pop_receipt,
            text=message.text,
            dequeue_count=message.dequeue_count,
            inserted_at=message.inserted_at,
        )

    def _current(self, received: ReceivedMessage) -> _StoredMessage | None:
        state = self._state
        stored = state.messages.get(received.id) if state else None
        if stored is None or stored.pop_receipt != received.pop_receipt:
            return None
        return stored

    async def delete(self, message: ReceivedMessage) -> bool:
        stored = self._current(message)
        if stored is None:
            return False
        state = self._state
        assert state is not None
        del state.messages[stored.id]
        return True

    async def extend(self, message: ReceivedMessage, visibility_s: int) -> ReceivedMessage | None:
        stored = self._current(message)
        if stored is None:
            return None
        stored.visible_at = self._queues.clock() + min(max(visibility_s, 0), MAX_VISIBILITY_S)
        stored.pop_receipt = uuid.uuid4().hex
        return replace(message, pop_receipt=stored.pop_receipt)

    async def approximate_count(self) -> int:
        state = self._state
        return len(state.messages) if state else 0

    async def oldest_visible_at(self) -> float | None:
        state = self._state
        now = self._queues.clock()
        visible = (m for m in (state.messages.values() if state else ()) if m.visible_at <= now)
        return next((m.inserted_at for m in visible), None)

    # -- test helpers (not part of the port) ---------------------------------------------------
    def peek_texts(self) -> list[str]:
        """Every message's text, visible or not, in insertion order."""
        state = self._state
        return [m.text for m in state.messages.values()] if state else []


class MemoryQueues:
    """Queues of one in-memory account; handles are cached and share the queue states."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.states: dict[str, MemoryQueueState] = {}
        self._handles: dict[str, MemoryQueue] = {}

    def get(self, azure_name: str) -> MemoryQueue:
        handle = self._handles.get(azure_name)
        if handle is None:
            handle = self._handles[azure_name] = MemoryQueue(self, azure_name)
        return handle

    async def list_names(self, prefix: str) -> list[str]:
        return sorted(name for name in self.states if name.startswith(prefix))


# -- index ---------------------------------------------------------------------------------------


_PROJECTED_FIELDS = tuple(
    name for name in IndexRow.__dataclass_fields__ if name != "cancel_requested"
)


def _copy_row(row: IndexRow) -> IndexRow:
    error = row.error[:MAX_INDEX_ERROR_CHARS] if row.error else None  # as the table keeps it
    return replace(row, counts=dict(row.counts), queues=list(row.queues), error=error)


class MemoryIndex:
    """The index table: rows keyed by ``index_row_key``, scanned in key order (newest first)."""

    def __init__(self) -> None:
        self.rows: dict[str, IndexRow] = {}

    async def create(self, row: IndexRow) -> None:
        self.rows.setdefault(index_row_key(row.workflow_id, row.created_at), _copy_row(row))

    async def project(self, row: IndexRow) -> None:
        key = index_row_key(row.workflow_id, row.created_at)
        current = self.rows.get(key)
        if current is None:
            # An upsert-merge creates the row without the cancel flag (which then reads False).
            self.rows[key] = replace(_copy_row(row), cancel_requested=False)
            return
        fresh = _copy_row(row)
        for name in _PROJECTED_FIELDS:
            setattr(current, name, getattr(fresh, name))

    def _existing(self, workflow_id: str, created_at: float) -> IndexRow:
        row = self.rows.get(index_row_key(workflow_id, created_at))
        if row is None:
            raise NotFoundError(f"workflow {workflow_id!r} has no index row")
        return row

    async def request_cancel(self, workflow_id: str, created_at: float) -> None:
        self._existing(workflow_id, created_at).cancel_requested = True

    async def clear_cancel(self, workflow_id: str, created_at: float) -> None:
        self._existing(workflow_id, created_at).cancel_requested = False

    async def get(self, workflow_id: str, created_at: float) -> IndexRow | None:
        row = self.rows.get(index_row_key(workflow_id, created_at))
        return _copy_row(row) if row else None

    async def list(
        self,
        *,
        status: WorkflowStatus | None = None,
        name_prefix: str | None = None,
        limit: int = 50,
        continuation: str | None = None,
    ) -> IndexPage:
        after = ""
        if continuation is not None:
            after = decode_continuation(continuation, frozenset({"after"}))["after"]
        matching = [
            key
            for key in sorted(self.rows)
            if key > after
            and (status is None or self.rows[key].status == status)
            and (not name_prefix or self.rows[key].name.startswith(name_prefix))
        ]
        page = matching[: min(max(limit, 1), MAX_PAGE)]
        more = len(matching) > len(page)
        token = encode_continuation({"after": page[-1]}) if more else None
        return IndexPage([_copy_row(self.rows[key]) for key in page], token)

    async def delete(self, workflow_id: str, created_at: float) -> None:
        self.rows.pop(index_row_key(workflow_id, created_at), None)

    async def created_before(
        self, before: float, *, limit: int = 100, continuation: str | None = None
    ) -> IndexPage:
        after = created_before_key(before)
        if continuation is not None:
            after = max(after, decode_continuation(continuation, frozenset({"after"}))["after"])
        matching = [key for key in sorted(self.rows) if key > after]
        page = matching[: min(max(limit, 1), MAX_PAGE)]
        more = len(matching) > len(page)
        token = encode_continuation({"after": page[-1]}) if more else None
        return IndexPage([_copy_row(self.rows[key]) for key in page], token)

    async def active(self, partition: int | None = None) -> builtins.list[IndexRow]:
        return [
            _copy_row(row)
            for _, row in sorted(self.rows.items())
            if not row.status.is_terminal and partition in (None, row.partition)
        ]


# -- everything together -------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryStorage(Storage):
    """A Storage whose fields have their concrete in-memory types, so tests can look inside
    (``storage.queues.states``, ``storage.workflows.container.blobs``, ``storage.lease``)."""

    workflows: MemoryWorkflowBlobs
    outputs: MemoryOutputBlobs
    deadletters: MemoryDeadLetters
    lease: MemoryLease
    queues: MemoryQueues
    index: MemoryIndex
    event_queue: MemoryQueue
    event_poison_queue: MemoryQueue
    registry: MemoryRegistry
    names: ResourceNames = field(kw_only=True)
    leases: dict[int, MemoryLease] = field(kw_only=True, hash=False, compare=False)
    """Every partition's lease, shared by all views of this storage."""

    def for_partition(self, partition: int) -> MemoryStorage:
        """This storage with ``partition``'s event queue, poison queue and lease."""
        if partition == self.partition:
            return self
        lease = self.leases.get(partition)
        if lease is None:
            lease = self.leases[partition] = MemoryLease(self.lease.clock)
        return replace(
            self,
            lease=lease,
            event_queue=self.queues.get(self.names.partition_event_queue(partition)),
            event_poison_queue=self.queues.get(self.names.partition_poison_queue(partition)),
            partition=partition,
        )


def memory_storage(prefix: str = "mem", clock: Clock = time.time) -> MemoryStorage:
    """A fresh in-memory Storage for ``prefix``: every adapter, sharing one clock.

    Each call has its own state; share one instance between components that must see each other
    (two coordinators contending for the lease, an API and a coordinator).
    """
    names = ResourceNames(prefix)
    queues = MemoryQueues(clock)
    lease = MemoryLease(clock)
    return MemoryStorage(
        workflows=MemoryWorkflowBlobs(MemoryContainer(names.workflows_container)),
        outputs=MemoryOutputBlobs(MemoryContainer(names.outputs_container)),
        deadletters=MemoryDeadLetters(MemoryContainer(names.deadletter_container)),
        lease=lease,
        queues=queues,
        index=MemoryIndex(),
        event_queue=queues.get(names.event_queue),
        event_poison_queue=queues.get(names.event_poison_queue),
        registry=MemoryRegistry(clock),
        names=names,
        leases={0: lease},
    )


__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_VISIBILITY_S",
    "MemoryContainer",
    "MemoryDeadLetters",
    "MemoryIndex",
    "MemoryLease",
    "MemoryOutputBlobs",
    "MemoryQueue",
    "MemoryQueues",
    "MemoryStorage",
    "MemoryWorkflowBlobs",
    "memory_storage",
]
