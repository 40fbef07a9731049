"""What a running attempt shows while it runs: its log (log_shipper.py) and its progress
(progress_file.py), both looked at every ``--live-s``.

Progress goes to ``on_progress`` (the worker's registry presence, which sends it with its
heartbeat), never to the coordinator: no event is posted per update.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

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


ProgressSink = Callable[[AttemptKey, TaskProgress], None]
"""Receives an attempt's latest progress when it changed."""


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
    ) -> None:
        name = ResourceNames.log_blob(key.workflow_id, key.task, key.attempt)
        self.key = key
        self.shipper = LogShipper(
            outputs, name, log, max_bytes=max_log_bytes, logger=logger, lost=lost
        )
        self.progress = ProgressFile(progress)
        self.interval_s = interval_s
        self.on_progress = on_progress
        self._logger = logger
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"live {self.shipper.name}")

    async def _loop(self) -> None:
        while True:
            # First look after one interval: a task that ends sooner costs one log write in all.
            await asyncio.sleep(self.interval_s)
            await self.shipper.tick()
            self._read_progress()

    def _read_progress(self) -> None:
        try:
            changed = self.progress.read()
        except OSError as exc:  # the file is the task's to damage; the attempt goes on
            self._logger.debug("progress file unreadable: %s", exc)
            return
        if changed and self.on_progress is not None:
            self.on_progress(self.key, self.progress.progress)

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
