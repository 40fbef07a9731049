"""Dead letters on Azure Storage: the ``{prefix}-deadletter`` container, one JSON blob per event
that could not be applied (``{day}/{inverted time}-{message_id}.json``)."""

from __future__ import annotations

import asyncio
import builtins
import logging
from typing import Any

from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import ContainerClient

from shared.limits import DEAD_LETTER_SCAN
from shared.names import ResourceNames
from shared.storage.azure.blobs import total_size
from shared.storage.azure.errors import raise_missing
from shared.storage.azure.retry import repeated
from shared.storage.encoding import dead_letter_from_json, dead_letter_json, finite_time
from shared.storage.ports import DeadLetter

log = logging.getLogger("dagq.storage")

MAX_DEAD_LETTER_BYTES = 256 * 1024
"""Most bytes of one dead letter read: an event is at most 64 KiB, its letter (text, reason,
JSON escapes) well under this; a larger blob is not one dagq wrote, and is skipped unread."""


class AzureDeadLetters:
    """DeadLetters in the ``{prefix}-deadletter`` container: one JSON blob per event, named
    ``{day}/{inverted time}-{message_id}.json`` (``ResourceNames.deadletter_blob``), its receive
    time also kept in metadata so listing needs no downloads to find the most recent."""

    def __init__(self, container: ContainerClient) -> None:
        self.container = container

    @repeated
    async def put(self, *, message_id: str, text: str, reason: str, received_at: float) -> str:
        name = ResourceNames.deadletter_blob(received_at, message_id)
        try:
            await self.container.upload_blob(
                name,
                dead_letter_json(message_id, text, reason, received_at),
                overwrite=True,
                metadata={"received_at": repr(received_at)},
                content_settings=ContentSettings("application/json"),
            )
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"blob {name!r}")
        return name

    @repeated
    async def list(self, limit: int = 100, *, scan: int | None = None) -> builtins.list[DeadLetter]:
        # Newest day first ({YYYY-MM-DD}/...), stopping once a day completes the page or the scan
        # budget is spent: 50,000 old letters cost nothing to show today's 20. Within a day the
        # names list newest first (``ResourceNames.deadletter_blob``), so a day stops once it
        # gave ``limit`` of them: the rest of it is older (names of an earlier dagq, in no useful
        # order, were all written before the first newest-first name of their day).
        if limit <= 0:
            return []
        bound = DEAD_LETTER_SCAN if scan is None else scan
        stamped: builtins.list[tuple[float, float, str]] = []
        try:
            days = [item.name async for item in self.container.walk_blobs(delimiter="/")]
            for day in sorted(days, reverse=True):
                newest_first = 0
                async for blob in self.container.list_blobs(name_starts_with=day,
                                                            include=["metadata"]):  # fmt: skip
                    stamped.append((_written_at(blob), _received_at(blob.metadata), blob.name))
                    newest_first += _truly_named(blob)
                    if len(stamped) >= bound or newest_first >= limit:
                        break
                if len(stamped) >= limit or len(stamped) >= bound:
                    break
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, "dead letters")
        recent = sorted(stamped)[-limit:]
        letters = await asyncio.gather(*(self._read(name) for _, _, name in recent))
        return [letter for letter in letters if letter is not None]

    @repeated
    async def _read(self, name: str) -> DeadLetter | None:
        """The letter, or None (logged) when the blob is not one: the workers' identity may
        write here, and one forged blob must cost that blob, never ``dagq doctor``."""
        downloader = await self.container.download_blob(
            name, offset=0, length=MAX_DEAD_LETTER_BYTES
        )
        data = await downloader.readall()
        try:
            size = total_size(downloader)
            if size > MAX_DEAD_LETTER_BYTES:
                raise ValueError(f"{size} bytes: not a dead letter dagq wrote")
            return dead_letter_from_json(name, data)
        except Exception as exc:
            log.warning("dead letter %s cannot be read, skipped: %s", ascii(name[:200]),
                        ascii(repr(exc)[:200]))  # fmt: skip
            return None


def _written_at(blob: Any) -> float:
    """When storage wrote a listed letter (the service's Last-Modified, to the second): the first
    key of "most recent", before the time its writer chose (the workers' identity may write
    letters: a future ``received_at`` kept a forged one "most recent" for good), which only
    orders letters written within the same second."""
    modified = getattr(blob, "last_modified", None)
    return float(modified.timestamp()) if modified is not None else 0.0


NAMED_TIME_SLACK_S = 600.0
"""How far a letter's named receive time may be from when storage wrote it (clock skew, a slow
write) and still count as telling the truth."""


def _truly_named(blob: Any) -> bool:
    """A newest-first name whose stated time is when storage wrote it: only such names stop a
    day's listing early (a name is its writer's choice; the workers' identity may write letters
    whose names sort first, and they must not push the real recent ones out of the listing)."""
    named = ResourceNames.deadletter_named_time(blob.name)
    written = _written_at(blob)
    return named is not None and abs(named - written) <= NAMED_TIME_SLACK_S


def _received_at(metadata: dict[str, str] | None) -> float:
    try:
        return finite_time((metadata or {}).get("received_at", "0"))
    except (ValueError, OverflowError):
        return 0.0
