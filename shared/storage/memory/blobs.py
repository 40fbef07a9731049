"""Blob containers in memory: workflow definitions and states (ETag compare-and-swap, create-only),
outputs and dead letters."""

from __future__ import annotations

import builtins
import itertools
from dataclasses import dataclass, field

from shared.errors import ConflictError, NotFoundError, StaleStateError
from shared.limits import DEAD_LETTER_SCAN, MAX_JOB_MARKS
from shared.names import ResourceNames
from shared.storage.encoding import (
    dead_letter_from_json,
    dead_letter_json,
    definition_incarnation,
    definition_metadata,
    mark_time,
    purge_marker_from_json,
    purge_marker_json,
)
from shared.storage.ports import DeadLetter, PurgeMark, StoredState
from shared.storage.repeat import is_repeat

_etags = itertools.count(1)


def _new_etag() -> str:
    # Shaped like Azure's ETags; unique within the process, so two writes never share one.
    return f'"0x{next(_etags):X}"'


@dataclass
class MemoryBlob:
    """One stored blob."""

    data: bytes
    etag: str
    metadata: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/octet-stream"


def _holds(blob: MemoryBlob, data: bytes, metadata: dict[str, str] | None) -> bool:
    return blob.data == data and (metadata is None or blob.metadata == metadata)


@dataclass
class MemoryContainer:
    """A blob container: name -> blob."""

    name: str
    blobs: dict[str, MemoryBlob] = field(default_factory=dict)

    def create_if_absent(
        self, name: str, data: bytes, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> MemoryBlob | None:  # fmt: skip
        """Store a new blob; None if one exists already (If-None-Match: *), unless this call is a
        repeat and the blob holds exactly its bytes and metadata (``shared.storage.repeat``)."""
        existing = self.blobs.get(name)
        if existing is not None:
            if is_repeat() and _holds(existing, data, metadata):
                return existing
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

    async def create_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None = None
    ) -> bool:
        name = ResourceNames.definition_blob(workflow_id)
        meta = definition_metadata(incarnation)
        return self.container.create_if_absent(name, data, metadata=meta) is not None

    async def write_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None
    ) -> None:
        name = ResourceNames.definition_blob(workflow_id)
        self.container.put(name, data, metadata=definition_metadata(incarnation))

    async def definition_properties(self, workflow_id: str) -> tuple[int | None, str]:
        name = ResourceNames.definition_blob(workflow_id)
        blob = self.container.get(name, f"definition of workflow {workflow_id!r}:")
        return definition_incarnation(blob.metadata), blob.etag

    async def delete_definition(self, workflow_id: str, etag: str) -> bool:
        name = ResourceNames.definition_blob(workflow_id)
        blob = self.container.blobs.get(name)
        if blob is None or blob.etag != etag:
            return False
        del self.container.blobs[name]
        return True

    async def read_definition(self, workflow_id: str) -> bytes:
        name = ResourceNames.definition_blob(workflow_id)
        return self.container.get(name, f"definition of workflow {workflow_id!r}:").data

    async def create_state(self, workflow_id: str, data: bytes, metadata: dict[str, str]) -> str:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.create_if_absent(name, data, metadata=metadata)
        if blob is None:
            raise ConflictError(f"the state of workflow {workflow_id!r} exists already")
        return blob.etag

    async def read_state(self, workflow_id: str) -> StoredState:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.get(name, f"state of workflow {workflow_id!r}:")
        return StoredState(blob.data, blob.etag, dict(blob.metadata))

    async def write_state(
        self, workflow_id: str, data: bytes, etag: str, metadata: dict[str, str]
    ) -> str:
        name = ResourceNames.state_blob(workflow_id)
        current = self.container.get(name, f"state of workflow {workflow_id!r}:")
        if current.etag != etag:
            if is_repeat() and _holds(current, data, metadata):
                return current.etag  # the earlier try wrote it
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

    async def delete(
        self, workflow_id: str, etag: str | None = None, *, definition: bool = True
    ) -> None:
        state = self.container.blobs.get(ResourceNames.state_blob(workflow_id))
        if state is not None and etag is not None and state.etag != etag:
            raise StaleStateError(
                f"the state of workflow {workflow_id!r} changed since it was read "
                f"(ETag {etag} is now {state.etag}): it was not deleted"
            )
        self.container.blobs.pop(ResourceNames.state_blob(workflow_id), None)
        if definition:
            self.container.blobs.pop(ResourceNames.definition_blob(workflow_id), None)

    async def mark_purge(self, workflow_id: str, mark: PurgeMark) -> None:
        body = purge_marker_json(mark)
        self.container.put(ResourceNames.purge_marker_blob(workflow_id), body)

    async def purge_marks(self, limit: int = 1000) -> dict[str, PurgeMark]:
        prefix = ResourceNames.PURGE_MARKER_PREFIX
        names = sorted(n for n in self.container.blobs if n.startswith(prefix))[: max(limit, 0)]
        return {
            n.removeprefix(prefix): purge_marker_from_json(self.container.blobs[n].data)
            for n in names
        }

    async def mark_job(self, job: str, at: float) -> None:
        self.container.put(ResourceNames.job_mark_blob(job), repr(float(at)).encode())

    async def job_marks(self) -> dict[str, float]:
        prefix = ResourceNames.JOB_MARK_PREFIX
        names = sorted(n for n in self.container.blobs if n.startswith(prefix))[:MAX_JOB_MARKS]
        times = {n.removeprefix(prefix): mark_time(self.container.blobs[n].data) for n in names}
        return {job: at for job, at in times.items() if at is not None}

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

    async def delete_prefix(self, prefix: str, *, segments: int | None = None) -> int:
        doomed = [
            name
            for name in self.container.blobs
            if name.startswith(prefix) and (segments is None or name.count("/") + 1 == segments)
        ]
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

    async def list(self, limit: int = 100, *, scan: int | None = None) -> builtins.list[DeadLetter]:
        # The Azure adapter's bounded scan: newest day first, names in listing order within a
        # day, a day stopping once it gave ``limit`` newest-first names (the rest of it is older).
        if limit <= 0:
            return []
        bound = DEAD_LETTER_SCAN if scan is None else scan
        by_day: dict[str, builtins.list[str]] = {}
        for name in self.container.blobs:
            by_day.setdefault(name.split("/", 1)[0], []).append(name)
        listed: builtins.list[str] = []
        for day in sorted(by_day, reverse=True):
            newest_first = 0
            for name in sorted(by_day[day]):
                listed.append(name)
                newest_first += ResourceNames.deadletter_newest_first(name)
                if len(listed) >= bound or newest_first >= limit:
                    break
            if len(listed) >= limit or len(listed) >= bound:
                break
        letters = [dead_letter_from_json(name, self.container.blobs[name].data) for name in listed]
        letters.sort(key=lambda letter: (letter.received_at, letter.name))
        return letters[-limit:]
