"""The 'started' event of a task that runs for a while (docs/worker.md).

A task that has run for ``started_after_s`` is announced, so the state can tell queued from running
(queue wait, the Gantt chart, ``queue_timeout_s``); a shorter task reports its start time with its
result instead and saves a queue round trip.
"""

from __future__ import annotations

import asyncio
import time

from shared.messages import TaskMessage, TaskStartedEvent
from worker_agent.config import WorkerSettings
from worker_agent.reporting import Reporter
from worker_agent.telemetry import TaskLogger


class StartedAnnouncer:
    """Posts the 'started' event once the task has run for ``started_after_s``."""

    def __init__(
        self, settings: WorkerSettings, reporter: Reporter, message: TaskMessage, log: TaskLogger
    ) -> None:
        self.settings = settings
        self.reporter = reporter
        self.message = message
        self.log = log
        self.started_at = time.time()
        self.posting = False
        """Set once the event is being sent: from then on it must not be cancelled halfway."""

    async def run(self) -> None:
        await asyncio.sleep(self.settings.started_after_s)
        self.posting = True
        await self.reporter.post(
            TaskStartedEvent(
                **self.message.report_fields(),
                worker=self.settings.worker_id,
                started_at=self.started_at,
            ),
            partition=self.message.partition,
            logger=self.log,
        )
