"""Stopping a running task when its workflow is cancelled (docs/worker.md, "Cancel").

Each running task looks at its workflow's state (one HEAD, ``workflow_check.cancelled_by``)
after ``cadence.cancel_check_interval(age)``: every ``--cancel-check-s`` while it is young, then a
quarter of its age, at most ``--cancel-check-max-s``. The worker's running tasks of one workflow
share the answers (``state_heads.StateHeads``): a task whose turn comes takes an answer at most
half its interval old (one in flight included), so a fan-out on a many-slot worker makes about
two HEADs per workflow per interval, not one per task. A task alone on its workflow sees a cancel
within one interval; one that shares answers within one and a half (a check lands in every
interval, and the first that comes half an interval after the cancel acts on an answer sent after
it).
"""

from __future__ import annotations

import asyncio
import time

from shared.messages import TaskMessage
from worker_agent.cadence import cancel_check_interval
from worker_agent.config import WorkerSettings
from worker_agent.runner import StopRequest
from worker_agent.state_heads import StateHeads
from worker_agent.telemetry import TaskLogger


async def watch_cancel(
    checks: StateHeads,
    settings: WorkerSettings,
    message: TaskMessage,
    stop: StopRequest,
    log: TaskLogger,
) -> None:
    """Request ``stop`` ("cancelled") once the task's workflow is seen cancelled; runs until the
    task ends (the caller cancels it)."""
    started = time.monotonic()
    while stop.reason is None:
        interval = cancel_check_interval(settings, time.monotonic() - started)
        await asyncio.sleep(interval)
        try:
            cancelled = await checks.cancelled(message, fresh_s=interval / 2)
        except Exception as exc:  # transient: the next check will tell
            log.debug("cancel check failed: %s", exc)
            continue
        if cancelled:
            log.info("workflow cancelled: stopping the task")
            stop.request("cancelled")
