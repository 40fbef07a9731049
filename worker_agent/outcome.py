"""What an attempt's run comes to: the event that reports it, with its output and log.

A run that exited 0 completes with its output (inline when small, else uploaded as a blob); any
other end — a timeout, a cancel, a non-zero exit, an unreadable output — fails with its reason and
the tail of its error. The log is finished (``LiveAttempt.finish``) before either is built, so the
event names the log as it will stay.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass

from pydantic import JsonValue

from shared.limits import ERROR_TAIL_CHARS
from shared.messages import (
    INLINE_OUTPUT_BYTES,
    FailureReason,
    OutputRef,
    TaskCompletedEvent,
    TaskEvent,
    TaskFailedEvent,
    TaskMessage,
)
from shared.names import ResourceNames
from worker_agent.config import WorkerSettings
from worker_agent.errors import AttemptError
from worker_agent.files import AttemptPaths, compact_json, read_output
from worker_agent.live import LiveAttempt
from worker_agent.logfile import LogFile
from worker_agent.reporting import Reporter
from worker_agent.runner import RunResult
from worker_agent.telemetry import TaskLogger


def failed_event(
    worker_id: str,
    message: TaskMessage,
    result: RunResult | None,
    reason: FailureReason,
    exit_code: int | None,
    error: str,
    *,
    log_blob: str | None = None,
) -> TaskFailedEvent:
    """The event that reports ``message``'s attempt failed (``result`` None: it never ran)."""
    return TaskFailedEvent(
        **message.report_fields(),
        worker=worker_id,
        started_at=result.started_at if result else None,
        finished_at=result.finished_at if result else time.time(),
        reason=reason,
        exit_code=exit_code,
        error=error[-ERROR_TAIL_CHARS:],
        log_blob=log_blob,
    )


@dataclass
class Outcome:
    """Builds the event of one attempt's run."""

    settings: WorkerSettings
    reporter: Reporter
    message: TaskMessage
    log: TaskLogger

    async def event(
        self,
        result: RunResult,
        paths: AttemptPaths,
        task_log: LogFile,
        live: LiveAttempt,
    ) -> TaskEvent:
        """Upload the log (and a large output) and build the event that reports ``result``."""
        log_blob = await live.finish()

        def failed(reason: FailureReason, error: str) -> TaskFailedEvent:
            return failed_event(
                self.settings.worker_id,
                self.message,
                result,
                reason,
                result.returncode,
                error,
                log_blob=log_blob,
            )

        if result.stopped == "timeout":
            return failed("timeout", f"timed out after {self.message.timeout_s:g} s")
        if result.stopped == "cancelled":
            return failed("cancelled", "stopped because the workflow was cancelled")
        if result.returncode != 0:
            tail = result.stderr_tail.strip() or task_log.tail(ERROR_TAIL_CHARS).strip()
            return failed(
                "exit", tail[-ERROR_TAIL_CHARS:] or f"exited with code {result.returncode}"
            )
        try:
            output = await asyncio.to_thread(
                read_output, paths.output, self.settings.max_output_bytes
            )
            ref = None if output is None else await self._output_ref(*output)
        except AttemptError as exc:
            self.log.warning("%s", exc)
            return failed("error", str(exc))
        return TaskCompletedEvent(
            **self.message.report_fields(),
            worker=self.settings.worker_id,
            started_at=result.started_at,
            finished_at=result.finished_at,
            output=ref,
            log_blob=log_blob,
        )

    async def _output_ref(self, value: JsonValue, raw: bytes) -> OutputRef:
        compact = compact_json(value)
        if len(compact) <= INLINE_OUTPUT_BYTES:
            return OutputRef(inline=value, size=len(compact))
        message = self.message
        name = ResourceNames.output_blob(
            message.workflow_id, message.task, message.attempt, message.blob_incarnation
        )
        await self.reporter.upload(name, raw, content_type="application/json", logger=self.log)
        return OutputRef(blob=name, size=len(raw), sha256=hashlib.sha256(raw).hexdigest())
