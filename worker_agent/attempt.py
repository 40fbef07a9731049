"""One received task message, from claim to delete.

1. Decode; a malformed message is dead-lettered and deleted (it cannot be reported to a workflow).
2. Heartbeat: keep the message invisible while this worker holds it.
3. Claim the attempt (a create-only blob, per incarnation, holding the queue message id): a
   second message for the same attempt (a duplicate dispatch) is deleted without running; the
   same message delivered again (its worker died) runs again.
4. One HEAD of the workflow, right before running: a message of another incarnation of its id, or
   with no state after a short wait (a submit sends the roots first: ``workflow_check``), is
   dead-lettered with the reason; a redelivery of a finished workflow's task is dropped; a
   cancelled workflow's attempt is reported failed, 'cancelled'. None of them runs.
5. Run the command (runner.py), watching for cancellation; post 'started' after ``started_after_s``.
6. Output, log upload, completed/failed event (retried until sent), THEN delete the message.

A stop for shutdown or preemption reports nothing: the message is visible again at once, for another
worker. When the heartbeat finds the message taken by another worker, the new holder reports."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from shared.errors import DagqError, MessageError
from shared.messages import (
    FailureReason,
    TaskEvent,
    TaskFailedEvent,
    TaskMessage,
    decode_task_message,
)
from shared.names import safe_name_problem, workflow_id_problem
from shared.signing import verifier_of
from shared.storage.ports import Queue, ReceivedMessage, Storage
from worker_agent import workflow_check
from worker_agent.cadence import heartbeat_schedule, live_interval
from worker_agent.cancel_watch import watch_cancel
from worker_agent.claim import claim
from worker_agent.config import WorkerSettings
from worker_agent.errors import AttemptError, StartError
from worker_agent.files import (
    AttemptPaths,
    closing_fd,
    open_cwd,
    read_upstream,
    resolve_cwd,
    write_json,
)
from worker_agent.heartbeat import Heartbeat
from worker_agent.live import AttemptKey, ErrorSink, LiveAttempt, ProgressSink
from worker_agent.logfile import LogFile
from worker_agent.outcome import Outcome, failed_event
from worker_agent.reporting import Reporter, retry_transient
from worker_agent.runner import Command, RunResult, StopRequest, run_command
from worker_agent.started import StartedAnnouncer
from worker_agent.state_heads import StateHeads
from worker_agent.task_env import task_environment
from worker_agent.task_user import TaskUser
from worker_agent.telemetry import TaskLogger
from worker_agent.workflow_check import (
    CANCELLED_STATUSES,
)

ERROR_RETRY_S = 5
"""After an unexpected error (storage outage, bug) the message comes back this much later."""


@dataclass(frozen=True)
class Attempt:
    """One task message this worker holds, from claim to delete: what it says, as it was
    received, the heartbeat that keeps it invisible, the stop request of its slot, the slot's
    GPUs and the logger bound to its workflow, task and attempt."""

    message: TaskMessage
    received: ReceivedMessage
    heartbeat: Heartbeat
    stop: StopRequest
    devices: str | None
    log: TaskLogger


@dataclass
class AttemptRunner:
    """Processes received task messages for one worker (shared by all its slots)."""

    settings: WorkerSettings
    storage: Storage
    reporter: Reporter
    log: TaskLogger
    cgroup_parent: Path | None = None
    """Where each task gets its own cgroup (``cgroup.probe()``); None: process groups only."""
    task_user: TaskUser | None = None
    """The user tasks run as (task_user.py); None: the agent's own."""
    on_progress: ProgressSink | None = None
    """Where a running attempt's progress goes (the registry presence); None: nowhere."""
    on_live_error: ErrorSink | None = None
    """Told of each failed read of a running attempt's progress (the registry presence)."""
    heads: StateHeads | None = None
    """The HEADs of state blobs this worker's tasks share (state_heads.py)."""

    async def process(
        self,
        queue: Queue,
        queue_name: str,
        received: ReceivedMessage,
        stop: StopRequest,
        devices: str | None,
    ) -> None:
        """Handle one received message to the end (never raises for a task's own failure)."""
        log = self.log.bind(queue=queue_name)
        try:
            message = self._decode(received)
        except MessageError as exc:
            await self._dead_letter(queue, received, str(exc), log)
            return
        log = log.bind(workflow=message.workflow_id, task=message.task, attempt=message.attempt)
        heartbeat = Heartbeat(
            queue,
            received,
            visibility_s=self.settings.visibility_s,
            interval_s=self.settings.heartbeat_interval_s,
            logger=log,
            schedule=lambda age: heartbeat_schedule(self.settings, age),
        )
        heartbeat.start()
        attempt = Attempt(message, received, heartbeat, stop, devices, log)
        # A storage outage or a bug, not the task's doing: hand the message back so the attempt
        # is retried (by this worker or another) instead of being reported.
        try:
            await self._attempt(attempt)
        except asyncio.CancelledError:
            await self._release(attempt)
            raise
        except Exception:
            await self._release_after_error(attempt)
        except BaseException:
            await self._release_after_error(attempt)
            raise

    # -- steps ---------------------------------------------------------------------------------

    def _decode(self, received: ReceivedMessage) -> TaskMessage:
        """The message, if well-formed and (with verify keys) signed by the app: checked before
        the claim, so a forged message never takes an attempt's claim either."""
        message = decode_task_message(received.text)
        problem = workflow_id_problem(message.workflow_id) or safe_name_problem(message.task)
        if problem:
            raise MessageError(f"malformed task message: {problem}")
        verifier = verifier_of(self.settings.verify_keys)
        if verifier is not None:
            verifier.check(message)
        return message

    async def _attempt(self, attempt: Attempt) -> None:
        message, received, log = attempt.message, attempt.received, attempt.log
        if self.heads is None:  # one per worker: its tasks of a workflow share answers
            self.heads = StateHeads(self.storage)
        if not await claim(self.storage.outputs, message, received):
            log.info("duplicate dispatch of an attempt another message holds: dropping it")
            await self._finish(attempt)
            return
        # A HEAD sent after the claim, right before running (one from before the claim could be
        # stale by the time the task starts: simulation seed 2306); shared with the worker's
        # tasks of the workflow whose claims were done by then.
        seen = await self.heads.seen(message, sent_after=self.heads.clock())
        if seen.missing and (wait := workflow_check.state_wait_s(received, time.time())):
            await self._release(attempt, after_s=wait)  # no state yet: its roots go out first
            return
        if reason := seen.foreign or await workflow_check.orphaned(self.storage, seen, message):
            queue = attempt.heartbeat.queue
            await self._dead_letter(queue, received, reason, log, attempt.heartbeat)
            return
        if seen.late(message, received.dequeue_count):
            log.info("the task's run has ended: dropping a late message of the task")
            await self._finish(attempt)
            return
        if seen.status in CANCELLED_STATUSES:
            log.info("workflow is cancelled: not running the task")
            error = "the workflow was cancelled before the task started"
            await self._report(attempt, self._failed(attempt, "cancelled", error))
            return
        limit = self.settings.max_deliveries
        if limit and received.dequeue_count > limit:
            error = (
                f"the task message was delivered {received.dequeue_count} times without finishing"
                " (its workers died or were preempted each time; limit --max-deliveries "
                f"{limit})"
            )
            log.error("%s: reporting the attempt failed", error)
            await self._report(attempt, self._failed(attempt, "error", error))
            return
        if not attempt.heartbeat.held():  # the checks outlasted the visibility (seed 3604306)
            log.warning("the message's visibility ran out before the task started: not running it")
            await attempt.heartbeat.stop()  # another worker may hold it: it is theirs now
            return
        paths = AttemptPaths.create(self.settings.work_dir, message)
        try:
            await self._run_and_report(attempt, paths)
        finally:
            if not self.settings.keep_work_dirs:
                paths.remove()

    async def _run_and_report(self, attempt: Attempt, paths: AttemptPaths) -> None:
        message, log = attempt.message, attempt.log
        try:
            cwd = resolve_cwd(self.settings.work_dir, paths.work, message.cwd)
            upstream = await read_upstream(message, self.storage.outputs)
            write_json(paths.upstream, upstream.values)
            if message.upstream_digest not in (None, upstream.digest):  # another send's bundle
                message = message.model_copy(update={"upstream_digest": upstream.digest})
                attempt = replace(attempt, message=message)  # its reports say what it ran on
            env = task_environment(
                os.environ, message, paths, attempt.devices, self.settings.task_env
            )
            if self.task_user is not None:
                env.update(self.task_user.environment())
            cwd_fd = None if self.task_user is None else open_cwd(cwd, self.settings.work_dir)
        except AttemptError as exc:
            log.warning("cannot run the task: %s", exc)
            await self._report(attempt, self._failed(attempt, "error", str(exc)))
            return
        if attempt.stop.reason == "shutdown":
            closing_fd(cwd_fd).close()
            await self._release(attempt)
            return
        # The agent's files are made while the directory is root's; it is handed over last.
        with (
            closing_fd(cwd_fd),
            LogFile.create(paths.log) as task_log,
            LogFile.create(paths.progress) as progress,
        ):
            if self.task_user is not None:
                self.task_user.hand_over(paths.root, [paths.work.name], [progress.fd])
            user = None if self.task_user is None else (self.task_user.uid, self.task_user.gid)
            command = Command(
                cmd=message.cmd,
                cwd=cwd,
                cwd_fd=cwd_fd,
                env=env,
                log_path=paths.log,
                log=task_log,
                timeout_s=message.timeout_s,
                cgroup_parent=self.cgroup_parent,
                user=user,
            )
            live = self._live(attempt, progress, task_log)
            try:
                result = await self._run(attempt, command)
            except StartError as exc:
                log.warning("%s", exc)
                await self._report(attempt, self._failed(attempt, "error", str(exc)))
                return
            finally:
                await live.stop()
            if result.stopped == "shutdown":
                log.info("task stopped for shutdown; its message is released for another worker")
                await self._release(attempt)
                return
            outcome = Outcome(self.settings, self.reporter, message, log)
            event = await outcome.event(result, paths, task_log, live)
        await self._report(attempt, event)

    def _live(self, attempt: Attempt, progress: LogFile, task_log: LogFile) -> LiveAttempt:
        """Start shipping the log and reading the progress file of the attempt about to run."""
        message, heartbeat = attempt.message, attempt.heartbeat
        live = LiveAttempt(
            AttemptKey(message.workflow_id, message.task, message.attempt),
            progress,
            task_log,
            self.storage.outputs,
            max_log_bytes=self.settings.max_log_bytes,
            interval_s=self.settings.live_s,
            logger=attempt.log,
            lost=lambda: heartbeat.lost,
            on_progress=self.on_progress,
            on_error=self.on_live_error,
            blob_incarnation=message.blob_incarnation,
            ship_interval=lambda age: live_interval(self.settings, age),
        )
        live.start()
        return live

    async def _run(self, attempt: Attempt, command: Command) -> RunResult:
        message, log = attempt.message, attempt.log
        announcer = StartedAnnouncer(self.settings, self.reporter, message, log)
        announce = asyncio.create_task(announcer.run())
        watch = asyncio.create_task(self._watch_cancel(attempt))
        log.info("running: %s", message.cmd[:200])
        try:
            result = await run_command(
                command, attempt.stop, kill_grace_s=self.settings.kill_grace_s
            )
        finally:
            watch.cancel()
            if announcer.posting:
                await announce  # the started event is on its way: let it land before the result
            else:
                announce.cancel()
        log.info(
            "finished: exit %d%s in %.1f s",
            result.returncode,
            f" ({result.stopped})" if result.stopped else "",
            result.finished_at - result.started_at,
        )
        return result

    async def _watch_cancel(self, attempt: Attempt) -> None:
        message, stop, log = attempt.message, attempt.stop, attempt.log
        assert self.heads is not None  # made before the claim
        await watch_cancel(self.heads, self.settings, message, stop, log)

    def _failed(self, attempt: Attempt, reason: FailureReason, error: str) -> TaskFailedEvent:
        """The event of an attempt that failed before its command ran (no result, no exit)."""
        return failed_event(self.settings.worker_id, attempt.message, None, reason, None, error)

    # -- the message ---------------------------------------------------------------------------

    async def _report(self, attempt: Attempt, event: TaskEvent) -> None:
        """Post the attempt's result, then delete its message (unless another worker holds it)."""
        log = attempt.log
        if attempt.heartbeat.lost:
            log.warning("not reporting: another worker holds this attempt's message now")
            await attempt.heartbeat.stop()
            return
        await self.reporter.post(event, partition=attempt.message.partition, logger=log)
        log.info("reported %s", event.kind)
        await self._finish(attempt)

    async def _finish(self, attempt: Attempt) -> None:
        """Delete the message with its latest receipt."""
        await self._finish_held(attempt.heartbeat, attempt.log)

    async def _finish_held(self, heartbeat: Heartbeat, log: TaskLogger) -> None:
        """Delete the message ``heartbeat`` holds, with its latest receipt."""
        current = await heartbeat.stop()
        if current is None:
            return
        deleted = await retry_transient(
            "deleting the task message", lambda: heartbeat.queue.delete(current), logger=log
        )
        if not deleted:
            log.warning("task message was already gone or taken by another worker")

    async def _release_after_error(self, attempt: Attempt) -> None:
        attempt.log.exception("could not process the task message; releasing it for a retry")
        await self._release(attempt, after_s=ERROR_RETRY_S)

    async def _release(self, attempt: Attempt, after_s: int = 0) -> None:
        """Make the message visible again after ``after_s``."""
        await self._release_held(attempt.heartbeat, attempt.log, after_s)

    async def _release_held(self, heartbeat: Heartbeat, log: TaskLogger, after_s: int = 0) -> None:
        """Make the message ``heartbeat`` holds visible again after ``after_s`` (best effort:
        else it reappears when its visibility timeout ends)."""
        current = await heartbeat.stop()
        if current is None:
            return
        try:
            await heartbeat.queue.extend(current, after_s)
        except Exception as exc:
            log.warning("could not release the task message (%s); it reappears later", exc)

    async def _dead_letter(
        self,
        queue: Queue,
        received: ReceivedMessage,
        reason: str,
        log: TaskLogger,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        """Keep the message aside with ``reason``, then delete it (a held one with the
        heartbeat's latest receipt)."""
        log.error("task message %s dead-lettered: %s", received.id, reason)
        try:
            await retry_transient(
                "dead-lettering a malformed task message",
                lambda: self.storage.deadletters.put(
                    message_id=received.id,
                    text=received.text,
                    reason=f"task queue {queue.name}: {reason}",
                    received_at=time.time(),
                ),
                logger=log,
            )
        except DagqError as exc:
            log.error("could not dead-letter message %s: %s", received.id, exc)
            if heartbeat is not None:
                await self._release_held(heartbeat, log, after_s=ERROR_RETRY_S)
            return
        if heartbeat is not None:
            await self._finish_held(heartbeat, log)
        else:
            await retry_transient("deleting a malformed message", lambda: queue.delete(received))
