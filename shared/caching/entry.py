"""A cache entry: what a successful attempt of a cached task left for later runs with its key.

One blob per key (``shared.names`` ``cache_entry_blob``): a JSON header line (``CacheEntry``), then,
for an output that was stored as a blob, that blob's exact bytes (so its content hash, and with it
every downstream key, is the same when a later run reuses it). An entry owns its output's bytes:
purging the workflow that produced it does not break a later hit. Pure: no storage, no clock.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.errors import CodecError
from shared.limits import MAX_TIMESTAMP_S
from shared.messages import OutputRef
from shared.messages.fields import Attempt, TaskName, Timestamp, WorkflowId

MAX_ENTRY_HEADER_BYTES = 256 * 1024
"""Longest header line read (inline outputs are far smaller): a bigger blob is not an entry."""


class CachedFrom(BaseModel):
    """Where a cached result came from: the attempt that computed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow_id: WorkflowId
    task: TaskName
    attempt: Attempt
    run_s: float = Field(default=0.0, ge=0, le=MAX_TIMESTAMP_S)
    """How long that attempt ran: what a hit saves."""


class CacheEntry(BaseModel):
    """The header of a cache entry blob."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = Field(default=1, ge=1, le=1)
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    origin: CachedFrom
    created_at: Timestamp
    expires_at: Timestamp
    output: OutputRef | None = None
    """The output: inline, or (``blob`` unset, ``sha256`` set) the bytes after the header."""


def encode_entry(entry: CacheEntry, payload: bytes | None) -> bytes:
    """The entry blob: the header's JSON, a newline, then the blob output's bytes (if any)."""
    head = entry.model_dump_json(exclude_none=True).encode()
    return head + b"\n" + (payload or b"")


def decode_entry(data: bytes, key: str) -> tuple[CacheEntry, bytes | None]:
    """Read an entry blob for ``key``. Raises CodecError if it is not one, belongs to another key,
    or its payload does not match the hash it states."""
    head, sep, payload = data[:MAX_ENTRY_HEADER_BYTES].partition(b"\n")
    if not sep:
        raise CodecError("cache entry is corrupt: no header line")
    payload += data[MAX_ENTRY_HEADER_BYTES:]
    try:
        entry = CacheEntry.model_validate_json(head)
    except ValidationError as exc:
        raise CodecError(f"cache entry is corrupt: {exc.errors()[0]['msg']}") from None
    if entry.key != key:
        raise CodecError("cache entry is corrupt: it is another key's")
    ref = entry.output
    if ref is None or ref.sha256 is None or ref.inline is not None:
        return entry, None
    if hashlib.sha256(payload).hexdigest() != ref.sha256:
        raise CodecError("cache entry is corrupt: its output does not match its hash")
    return entry, payload
