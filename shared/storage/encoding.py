"""Formats the memory and Azure adapters share: dead-letter JSON, purge markers, a definition
blob's metadata, listing continuation tokens and the checks of an index batch."""

from __future__ import annotations

import base64
import binascii
import json
import math

from shared.errors import InvalidContinuationError
from shared.json_values import parse_untrusted
from shared.limits import INDEX_BATCH, MAX_TIMESTAMP_S
from shared.names import index_row_key
from shared.storage.ports import DeadLetter, IndexRow, PurgeMark

MAX_PAGE = 1000
"""Most index rows one ``Index.list`` page returns (a table query returns at most 1,000)."""


def batch_keys(rows: list[IndexRow]) -> list[str]:
    """The row keys of an ``Index.create_many`` batch; ValueError for more rows than one
    transaction holds (``INDEX_BATCH``) or two rows of one key (the service refuses both)."""
    keys = [index_row_key(row.workflow_id, row.created_at) for row in rows]
    if len(keys) > INDEX_BATCH:
        raise ValueError(f"{len(keys)} index rows: a batch holds at most {INDEX_BATCH}")
    if len(set(keys)) != len(keys):
        raise ValueError("two index rows of one workflow in a batch")
    return keys


def dead_letter_json(message_id: str, text: str, reason: str, received_at: float) -> bytes:
    """The body of a dead-letter blob."""
    body = {"message_id": message_id, "text": text, "reason": reason, "received_at": received_at}
    return json.dumps(body).encode()


def dead_letter_from_json(name: str, data: bytes) -> DeadLetter:
    """Decode a dead-letter blob written by ``dead_letter_json``. The workers' identity may write
    such blobs too: anything but strings and a finite time raises ValueError (the reader skips
    that letter)."""
    body = parse_untrusted(data)
    if not isinstance(body, dict):
        raise ValueError("a dead letter is a JSON object")
    fields = [body.get(key) for key in ("message_id", "text", "reason")]
    received_at = body.get("received_at")
    if not all(isinstance(v, str) for v in fields) or not isinstance(received_at, int | float):
        raise ValueError("a dead letter has string message_id, text, reason and a received_at")
    message_id, text, reason = (str(v) for v in fields)
    return DeadLetter(
        name=name,
        message_id=message_id,
        text=text,
        reason=reason,
        received_at=finite_time(received_at),
    )


def finite_time(value: object) -> float:
    """``value`` as seconds since the epoch: a finite number within MAX_TIMESTAMP_S, else
    ValueError (OverflowError included)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{str(value)[:40]!r} is not a time")
    number = float(value)
    if not math.isfinite(number) or not 0 <= number <= MAX_TIMESTAMP_S:
        raise ValueError(f"{str(value)[:40]!r} is not a time")
    return number


def purge_marker_json(mark: PurgeMark) -> bytes:
    """The body of a purge marker blob: what a resumed purge needs to find the index row and
    the purged incarnation's blobs."""
    body: dict[str, object] = {"created_at": mark.created_at}
    if mark.incarnation is not None:
        body["incarnation"] = mark.incarnation
    if mark.incarnation_blobs:
        body["incarnation_blobs"] = True
    return json.dumps(body).encode()


def purge_marker_from_json(data: bytes) -> PurgeMark:
    """What a purge marker holds. A creation time that cannot be read is 0 (the row is then left
    to the lifecycle of the table, and the blobs are still deleted); a marker without an
    incarnation (one written before markers kept it) names the flat layout only."""
    try:
        body = parse_untrusted(data)
        created_at = finite_time(body["created_at"])
    except (ValueError, KeyError, TypeError, OverflowError):
        return PurgeMark(0.0)
    raw = body.get("incarnation")
    incarnation = raw if type(raw) is int and raw >= 1 else None
    scoped = body.get("incarnation_blobs") is True and incarnation is not None
    return PurgeMark(created_at, incarnation, scoped)


def mark_time(data: bytes) -> float | None:
    """The time a job mark blob holds (``repr`` of a float), or None when unreadable."""
    try:
        return finite_time(float(data.decode("ascii")))
    except (ValueError, TypeError, OverflowError, UnicodeDecodeError):
        return None


EARLIEST_KEY_TIME_S = 0.001
LATEST_KEY_TIME_S = (10**13 - 1) / 1000
"""The creation times an index RowKey can hold (13 inverted digits of milliseconds)."""


DEFINITION_INCARNATION_KEY = "incarnation"
"""A definition blob's metadata: the incarnation whose submit wrote it (absent: a dagq from before
issue 30's fix wrote it). A purge deletes a definition only if it is the purged incarnation's."""


def definition_metadata(incarnation: int | None) -> dict[str, str]:
    """The metadata of a definition blob written for ``incarnation``."""
    return {} if incarnation is None else {DEFINITION_INCARNATION_KEY: str(incarnation)}


def definition_incarnation(metadata: dict[str, str]) -> int | None:
    """The incarnation ``definition_metadata`` recorded (None: absent or not a number)."""
    value = next((v for k, v in metadata.items() if k.lower() == DEFINITION_INCARNATION_KEY), None)
    return int(value) if value is not None and value.isdigit() else None


def created_before_key(before: float) -> str:
    """Every index RowKey of a workflow created before ``before`` sorts after this (the keys
    invert the creation time). A time outside what a key can hold is clamped: a cutoff before
    1970 (``now`` minus a huge age) matches nothing, one after the year 2286 everything."""
    clamped = min(max(before, EARLIEST_KEY_TIME_S), LATEST_KEY_TIME_S)
    return index_row_key("", clamped).removesuffix("-")


def encode_continuation(payload: dict[str, str]) -> str:
    """An opaque, URL-safe continuation token (unpadded base64url of compact JSON)."""
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continuation(token: str, keys: frozenset[str]) -> dict[str, str]:
    """The payload of a token made by ``encode_continuation``: a non-empty object whose keys are
    among ``keys`` and whose values are strings. InvalidContinuationError (a ValueError) if the
    token is anything else."""
    problem = (
        f"invalid continuation token {token[:40]!r}: pass back the 'next' value of the previous "
        "page unchanged, or omit it to start from the newest workflow"
    )
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload = parse_untrusted(raw)
    except (binascii.Error, ValueError):
        raise InvalidContinuationError(problem) from None
    if (
        not isinstance(payload, dict)
        or not payload
        or not set(payload) <= keys
        or not all(isinstance(value, str) for value in payload.values())
    ):
        raise InvalidContinuationError(problem)
    return payload
