"""Live logs: a running attempt's log reaches its append blob in bounded chunks.

The append blob (``{workflow}/{incarnation}/{task}/{attempt}/log.txt``) is created, empty, once the
task has run for ``--live-s``. Then at each live interval (live.py: it grows with the task's age)
the bytes the task wrote since the last append (at most ``CHUNK_BYTES``) are appended: at most one
storage write per interval per attempt, and none when the task printed nothing; sooner when a
whole chunk is waiting (``backlog``), so a task that prints a lot is not left behind. When the
attempt ends, the rest is appended before the result is reported, so a finished attempt's log is
complete. A task that ends before the first interval costs one write, as before live logs: its
whole (bounded) log is put at once.

The blob is bounded by ``--max-log-bytes``: while the task runs, its first half is shipped; when
the attempt ends, a log that outgrew the limit gets the ``[... dagq: N bytes of log omitted ...]``
marker and its last half. A log within the limit is shipped whole.

Live appends are best effort (a failed one is tried again, with the same bytes, at the next
interval); the final ones are retried until stored. An append that finds the blob changed by
someone else (another worker took the attempt over) stops the shipping for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from shared.errors import ConflictError
from shared.limits import LOG_CHUNK_BYTES as CHUNK_BYTES
from shared.storage.ports import OutputBlobs
from shared.storage.tolerated import TOLERATED, Kind
from worker_agent.logfile import TRUNCATED, LogFile
from worker_agent.reporting import retry_transient

CONTENT_TYPE = "text/plain; charset=utf-8"


class LogShipper:
    """Appends one attempt's log file to its blob while the attempt runs, and at its end."""

    def __init__(
        self,
        outputs: OutputBlobs,
        name: str,
        log: LogFile,
        *,
        max_bytes: int,
        logger: logging.LoggerAdapter[logging.Logger],
        lost: Callable[[], bool] = lambda: False,
    ) -> None:
        self.outputs = outputs
        self.name = name
        self.log = log
        self.half = max_bytes // 2
        self.max_bytes = max_bytes
        self._logger = logger
        self._lost = lost
        self.created = False
        self.shipped = 0
        """Bytes of the log file in the blob."""
        self.blob_size = 0
        """Bytes in the blob (the file's bytes plus any marker)."""
        self.writes = 0
        """Storage writes made (creation and appends), for the benchmark."""
        self.stopped = False
        self._pending: bytes | None = None
        """A chunk whose append failed: the retry sends the same bytes (see ``append``)."""

    async def tick(self) -> None:
        """One live step: create the blob, or append what the task printed (best effort)."""
        if self.stopped or self._lost():
            return
        try:
            if not self.created:
                await self._write(b"")
                return
            if self._pending is None:
                size = await asyncio.to_thread(self.log.size)
                end = min(size, self.half, self.shipped + CHUNK_BYTES)
                if end <= self.shipped:
                    return
                self._pending = await asyncio.to_thread(self._read, self.shipped, end)
            await self._write(self._pending)
        except ConflictError as exc:
            self._stop(exc)
        except Exception as exc:  # the next tick tries the same bytes again
            TOLERATED.count(Kind.LOG_APPEND, exc, self.name)

    def backlog(self) -> int:
        """Bytes the task printed that a live append would ship (up to the live half)."""
        if self.stopped or self._pending is not None:
            return 0
        return max(0, min(self.log.size(), self.half) - self.shipped)

    async def run(self, interval_s: float) -> None:
        """Tick every ``interval_s`` until cancelled."""
        while True:
            await self.tick()
            await asyncio.sleep(interval_s)

    async def finish(self) -> str | None:
        """Append the rest of the log (retried until stored); the blob name, or None when the
        shipping stopped because another worker holds the attempt."""
        if self.stopped or self._lost():
            return None
        if not self.created:  # ended before the first interval: one write for the whole log
            data = await asyncio.to_thread(self.log.read, self.max_bytes)
            await retry_transient(
                f"uploading {self.name}",
                lambda: self.outputs.put(self.name, data, content_type=CONTENT_TYPE),
                logger=self._logger,
            )
            self.writes += 1
            return self.name
        try:
            for chunk in await asyncio.to_thread(self._rest):
                await retry_transient(
                    f"appending to {self.name}", lambda c=chunk: self._write(c),  # type: ignore[misc]
                    logger=self._logger,
                )  # fmt: skip
        except ConflictError as exc:
            self._stop(exc)
            return None
        return self.name

    # -- steps ---------------------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        at = self.blob_size if self.created else 0
        await self.outputs.append(
            self.name, data, at=at, content_type=CONTENT_TYPE, create=not self.created
        )
        self.writes += 1
        self.created = True
        self.blob_size = at + len(data)
        if data is self._pending:
            self._pending = None
            self.shipped += len(data)

    def _read(self, start: int, end: int) -> bytes:
        return self.log.pread(start, end - start)

    def _rest(self) -> list[bytes]:
        """What remains to append once the task ended, in chunks: the unshipped bytes of a log
        within the limit; else the rest of its first half, the marker and its last half."""
        chunks: list[bytes] = [] if self._pending is None else [self._pending]
        start = self.shipped + len(self._pending or b"")
        size = self.log.size()
        pieces: list[tuple[int, int] | None]
        if size <= self.max_bytes:
            pieces = [(start, size)]
        else:
            pieces = [(start, max(start, self.half)), None, (size - self.half, size)]
        for piece in pieces:
            if piece is None:
                chunks.append(TRUNCATED % (size - 2 * self.half))
                continue
            for at in range(piece[0], piece[1], CHUNK_BYTES):
                chunks.append(self.log.pread(at, min(CHUNK_BYTES, piece[1] - at)))
        return chunks

    def _stop(self, exc: Exception) -> None:
        self.stopped = True
        self._logger.warning("live log stopped: %s", exc)
