"""What a running attempt shows while it runs: its log (log_shipper.py) and its progress
(progress_file.py). The progress file (a local read) is looked at every ``--live-s``; the log is
appended to its blob (a storage write) every ``cadence.live_interval(age)``: ``--live-s`` while the
task is young, then a quarter of its age, at most ``--live-max-s``; and at the next look when a
whole chunk (``LOG_CHUNK_BYTES``, 4 MiB) is waiting: appends are batched by time and by size.

Progress goes to ``on_progress`` (the worker's registry presence, which sends it with its
heartbeat), never to the coordinator: no event is posted per update.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from shared.limits import LOG_CHUNK_BYTES
from shared.names import ResourceNames
from shared.progress import TaskProgress
from shared.storage.ports import OutputBlobs
from worker_agent.log_shipper import LogShipper
from worker_agent.logfile import LogFile
from worker_agent.progress_file import ProgressFile


@dataclass(frozen=True)
class AttemptKey:
    """One attempt of one task of one workflow."""

    workflow_id: str
    task: str
    attempt: int


_EARLY_S = 0.01
"""A timer may fire this much before its time (the event loop's clock resolution)."""

ProgressSink = Callable[[AttemptKey, TaskProgress], None]
"""Receives an attempt's latest progress when it changed."""
ErrorSink = Callable[[AttemptKey], None]
"""Told each time reading an attempt's progress failed (the worker counts them)."""


class LiveAttempt:
    """Ships the log and reads the progress of one running attempt."""

    def __init__(
        self,
        key: AttemptKey,
        progress: LogFile,
        log: LogFile,
        outputs: OutputBlobs,
        *,
        max_log_bytes: int,
        interval_s: float,
        logger: logging.LoggerAdapter[logging.Logger],
        lost: Callable[[], bool],
        on_progress: ProgressSink | None,
        on_error: ErrorSink | None = None,
        blob_incarnation: int | None = None,
        ship_interval: Callable[[float], float] | None = None,
    ) -> None:
        """``ship_interval(age)``: the wait before the next log append of an attempt that has
        run ``age`` seconds (None: every ``interval_s``)."""
        name = ResourceNames.log_blob(key.workflow_id, key.task, key.attempt, blob_incarnation)
        self.key = key
        self.shipper = LogShipper(
            outputs, name, log, max_bytes=max_log_bytes, logger=logger, lost=lost
        )
        self.progress = ProgressFile(progress)
        self.interval_s = interval_s
        self.ship_interval = ship_interval or (lambda _age: interval_s)
        self.on_progress = on_progress
        self.on_error = on_error
        self.errors = 0
        """Failed progress reads of this attempt (the first is logged as a warning)."""
        self._logger = logger
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"live {self.shipper.name}")

    async def _loop(self) -> None:
        # Appends at the ages ``cadence.ticks_within`` counts (the benchmark's model); progress
        # reads every ``interval_s`` and at each append. The first append comes after one
        # interval: a task that ends sooner costs one log write in all.
        started = time.monotonic()
        ship_at = self.ship_interval(0.0)
        read_at = self.interval_s
        while True:
            age = time.monotonic() - started
            await asyncio.sleep(max(0.0, min(ship_at, read_at) - age))
            age = time.monotonic() - started
            due = age >= ship_at - _EARLY_S
            if due or await asyncio.to_thread(self.shipper.backlog) >= LOG_CHUNK_BYTES:
                await self.shipper.tick()  # by time or by size; it catches what it meets
            if due:
                ship_at += self.ship_interval(ship_at)
                late = time.monotonic() - started
                if ship_at < late:  # storage was slow: no burst of appends to catch up
                    ship_at = late + self.ship_interval(late)
            if age >= read_at - _EARLY_S:
                read_at = max(read_at + self.interval_s, age)
            self._read_progress()

    def _read_progress(self) -> None:
        # The file and its text are the task's: whatever reading them raises, the live loop and
        # the attempt go on (a loop that died took the log with it and left the attempt
        # unreported, to be rerun). Each failure is logged and counted (``live_errors`` of the
        # worker's registry record).
        try:
            changed = self.progress.read()
            if changed and self.on_progress is not None:
                self.on_progress(self.key, self.progress.progress)
        except Exception as exc:
            self.errors += 1
            level = logging.WARNING if self.errors == 1 else logging.DEBUG
            key = self.key
            self._logger.log(
                level, "cannot read the progress of %s/%s/%d (%d so far): %r",
                key.workflow_id, key.task, key.attempt, self.errors, exc,
            )  # fmt: skip
            if self.on_error is not None:
                self.on_error(self.key)

    async def stop(self) -> None:
        """Stop looking (the task ended); the progress file is closed."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        self._read_progress()
        self.progress.close()

    async def finish(self) -> str | None:
        """Append the rest of the log: its blob name (None when another worker holds it)."""
        return await self.shipper.finish()
