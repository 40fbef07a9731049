"""The worker agent: task slots polling queues in priority order, and an orderly shutdown.

Each slot takes one message at a time: it polls the first queue and moves to the next only when
that one is empty, so a worker serving ``gpu cpu`` drains GPU work first. When every queue is
empty the slot joins the idle slots, of which only one at a time (the scout) keeps polling,
doubling its wait from ``min_poll_s`` up to ``max_poll_s``. When the scout gets a message it runs
it and the next idle slot becomes the scout and polls at once, so a burst is picked up slot after
slot while an idle worker costs one receive per ``max_poll_s`` per queue, however many slots it has
(docs/worker.md has the figures).

Shutdown (SIGTERM/SIGINT, a Scheduled Events notice, or the idle timeout) stops all polling at
once; tasks still running get ``shutdown_grace_s`` (or whatever the notice leaves) to finish, then
they are stopped and their messages made visible again for another worker. A second signal stops
them at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from contextlib import suppress

from shared.names import ResourceNames
from shared.storage.ports import Queue, ReceivedMessage, Storage
from worker_agent import cgroup
from worker_agent.attempt import AttemptRunner
from worker_agent.cadence import progress_interval
from worker_agent.config import WorkerSettings
from worker_agent.gpu import slot_plan
from worker_agent.preemption import (
    Notice,
    PeerLock,
    PreemptionWatcher,
    acknowledge,
    seconds_left,
)
from worker_agent.registry import Presence
from worker_agent.reporting import Reporter, retry_transient
from worker_agent.runner import StopRequest
from worker_agent.scale_in import ScaleInProtection
from worker_agent.task_user import TaskUser, describe_isolation
from worker_agent.telemetry import TaskLogger, task_logger

PREEMPT_MARGIN_S = 5.0
"""Stop tasks this long before a notice's NotBefore, so their messages are released in time."""


class Agent:
    """One worker agent process: ``await Agent(...).run()`` until shutdown; returns an exit code."""

    def __init__(
        self,
        settings: WorkerSettings,
        storage: Storage,
        names: ResourceNames,
        devices: list[str | None] | None = None,
        *,
        shielded: bool = False,
    ) -> None:
        """``devices``: each slot's CUDA_VISIBLE_DEVICES, if already planned (see gpu.slot_plan);
        ``shielded``: this process was made not dumpable (task_user.shield_agent)."""
        self.shielded = shielded
        self.settings = settings
        self.storage = storage
        self.queues: list[tuple[str, Queue]] = [
            (name, storage.queues.get(names.task_queue(name))) for name in settings.require_queues()
        ]
        self.devices = devices or slot_plan(
            settings.gpus, settings.gpus_per_task, settings.concurrency
        )
        self.slot_count = len(self.devices)
        self.log: TaskLogger = task_logger(worker=settings.worker_id)
        self.attempts = AttemptRunner(
            settings=settings,
            storage=storage,
            reporter=Reporter(
                lambda partition: storage.queues.get(names.partition_event_queue(partition)),
                storage.outputs,
            ),
            log=self.log,
            task_user=None if settings.task_user is None else TaskUser.lookup(settings.task_user),
        )
        self.isolated, self.isolation = describe_isolation(self.attempts.task_user, shielded)
        self.presence = Presence(
            storage.registry,
            worker_id=settings.worker_id,
            queues=[name for name, _ in self.queues],
            slots=self.slot_count,
            interval_s=settings.registry_s,
            progress_s=progress_interval(settings),
            vm_size=settings.vm_size,
            gpu_count=sum(len(d.split(",")) for d in self.devices if d),
        )
        self.attempts.on_progress = self.presence.progressed
        self.attempts.on_live_error = self.presence.live_error
        self.shutdown_reason: str | None = None
        self.notice: Notice | None = None
        """The Scheduled Events notice that stopped this agent, acknowledged after the hand-back."""
        self.peers = PeerLock(settings.work_dir / ".agents", settings.worker_id)
        self._draining = asyncio.Event()
        self._running: dict[int, StopRequest] = {}
        self._last_active = time.monotonic()
        self._stopper: asyncio.Task[None] | None = None
        self._stop_at: float | None = None
        self._scout = asyncio.Lock()
        """Held by the one idle slot that polls; the other idle slots wait for it."""
        self.scale_in: ScaleInProtection | None = (
            ScaleInProtection(
                metadata_url=settings.metadata_url,
                arm_url=settings.arm_url,
                client_id=os.environ.get("AZURE_CLIENT_ID") or None,
                work_dir=settings.work_dir,
                worker_id=settings.worker_id,
            )
            if settings.scale_in_protection
            else None
        )
        """Protects this VM from scale-in while a slot is busy (VM Scale Sets only)."""
        self._protected: bool | None = None
        self._protecting = asyncio.Lock()

    @property
    def busy(self) -> int:
        """How many slots are running a task now."""
        return len(self._running)

    # -- life cycle ----------------------------------------------------------------------------

    async def run(self, *, handle_signals: bool = False) -> int:
        """Serve the queues until shut down. Returns the process exit code (0)."""
        for _, queue in self.queues:
            await retry_transient(f"creating queue {queue.name}", queue.ensure, logger=self.log)
        if handle_signals:
            self._install_signal_handlers()
        await self._use_cgroups()
        await self._protect()  # clears a protection a crashed agent may have left on
        if self.settings.scheduled_events:
            try:
                await asyncio.to_thread(self.peers.hold)
            except OSError as exc:  # no lock: this agent may acknowledge under a running peer
                self.log.warning("cannot mark this agent in %s: %s", self.peers.directory, exc)
        watcher = asyncio.create_task(
            PreemptionWatcher(
                self.settings.metadata_url if self.settings.scheduled_events else "",
                poll_s=self.settings.metadata_poll_s,
                vm_name=self.settings.vm_name,
            ).run(self._on_notice)
        )
        self.log.info(
            "worker started: queues %s, %d slot(s)%s, work dir %s",
            ",".join(name for name, _ in self.queues),
            self.slot_count,
            "" if self.devices[0] is None else f", GPUs {' | '.join(map(str, self.devices))}",
            self.settings.work_dir,
        )
        (self.log.info if self.isolated else self.log.warning)(self.isolation)
        if self.settings.verify_keys is None:
            self.log.warning(
                "task messages are not verified: anyone who can write to the task queues can run"
                " commands here; set DAGQ_VERIFY_KEYS to the app's public key (docs/security.md)"
            )
        slots = [
            asyncio.create_task(self._slot(index, devices), name=f"slot {index}")
            for index, devices in enumerate(self.devices)
        ]
        presence = asyncio.create_task(self.presence.run(), name="registry")
        try:
            await asyncio.gather(*slots)
        finally:
            presence.cancel()
            watcher.cancel()
            if self._stopper is not None:
                self._stopper.cancel()
            for task in slots:
                task.cancel()
            with suppress(asyncio.CancelledError):
                await asyncio.gather(watcher, presence, *slots, return_exceptions=True)
            await self.presence.leave()
            await self._protect()
            await self._acknowledge()
            if handle_signals:
                self._remove_signal_handlers()
        self.log.info("worker stopped (%s)", self.shutdown_reason or "done")
        return 0

    async def _use_cgroups(self) -> None:
        """Give each task its own cgroup where the platform allows it (see cgroup.py)."""
        if self.settings.cgroups == "off":
            return
        found = await asyncio.to_thread(cgroup.probe)
        if isinstance(found, str):
            self.log.warning(
                "tasks run in process groups only (%s): a task process that calls setsid "
                "survives a cancel or timeout",
                found,
            )
        else:
            self.attempts.cgroup_parent = found
            self.log.info("each task runs in its own cgroup under %s", found)

    def shutdown(self, reason: str, grace_s: float) -> None:
        """Take no new work; stop tasks still running after ``grace_s`` and release them.

        Calling it again with a shorter grace brings the stop forward.
        """
        if self.shutdown_reason is None:
            self.shutdown_reason = reason
            self.log.info(
                "shutting down (%s): no new tasks; running tasks get %.0f s", reason, grace_s
            )
        self._draining.set()
        stop_at = time.monotonic() + max(0.0, grace_s)
        if self._stop_at is not None and stop_at >= self._stop_at:
            return
        self._stop_at = stop_at
        if self._stopper is not None:
            self._stopper.cancel()
        self._stopper = asyncio.get_running_loop().create_task(self._stop_running(grace_s))

    async def _stop_running(self, grace_s: float) -> None:
        await asyncio.sleep(grace_s)
        for stop in list(self._running.values()):
            stop.request("shutdown")

    async def _acknowledge(self) -> None:
        """After the hand-back, let Azure act on the notice now rather than at NotBefore, unless
        another agent of this VM is still handing back (the last one acknowledges)."""
        self.peers.release()
        if self.notice is None or not self.settings.scheduled_events_ack:
            return
        if await asyncio.to_thread(self.peers.others_running):
            self.log.info("another agent on this VM is still stopping: it acknowledges the event")
            return
        await asyncio.to_thread(acknowledge, self.settings.metadata_url, self.notice)

    def _on_notice(self, notice: Notice) -> None:
        self.notice = notice
        grace = self.settings.shutdown_grace_s
        left = seconds_left(notice)
        if left is not None:
            grace = min(grace, max(0.0, left - PREEMPT_MARGIN_S))
        self.shutdown(f"scheduled event {notice.event_type} {notice.event_id}", grace)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._on_signal, signum)

    def _remove_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self._draining.is_set():
            self.shutdown(f"second {name}", 0.0)  # asked twice: stop tasks now
        else:
            self.shutdown(name, self.settings.shutdown_grace_s)

    # -- slots ---------------------------------------------------------------------------------

    async def _slot(self, index: int, devices: str | None) -> None:
        while not self._draining.is_set():
            got = await self._receive()
            if got is None:
                async with self._scout:
                    got = await self._scout_for_work()
            if got is None:
                return
            name, queue, received = got
            stop = StopRequest()
            self._running[index] = stop
            self.presence.took(index, received)
            self._last_active = time.monotonic()
            try:
                await self._protect()
                await self.attempts.process(queue, name, received, stop, devices)
            finally:
                del self._running[index]
                self.presence.freed(index)
                self._last_active = time.monotonic()
                await self._protect()

    async def _protect(self) -> None:
        """Bring the VM's scale-in protection in line with whether a slot is busy (a no-op
        without --scale-in-protection; failures are logged by ScaleInProtection)."""
        if self.scale_in is None:
            return
        async with self._protecting:
            busy = bool(self._running)
            if busy == self._protected:
                return
            scale_in = self.scale_in
            await asyncio.to_thread(scale_in.busy if busy else scale_in.idle)
            self._protected = busy

    async def _scout_for_work(self) -> tuple[str, Queue, ReceivedMessage] | None:
        """Poll with a growing wait until a message arrives; None once draining (or idle too
        long, which starts the shutdown)."""
        wait = self.settings.min_poll_s
        while not self._draining.is_set():
            got = await self._receive()
            if got is not None:
                return got
            if self._idle_expired():
                self.shutdown("idle timeout", 0.0)
                return None
            with suppress(TimeoutError):
                await asyncio.wait_for(self._draining.wait(), timeout=wait)
            wait = min(wait * 2, self.settings.max_poll_s)
        return None

    async def _receive(self) -> tuple[str, Queue, ReceivedMessage] | None:
        """One message from the first non-empty queue, in priority order."""
        for name, queue in self.queues:
            if self._draining.is_set():
                return None
            try:
                messages = await queue.receive(1, self.settings.visibility_s)
            except Exception as exc:  # transient: count it as empty and back off
                self.log.warning("receiving from %s failed: %s", queue.name, exc)
                continue
            if messages:
                return name, queue, messages[0]
        return None

    def _idle_expired(self) -> bool:
        timeout = self.settings.idle_timeout_s
        if timeout <= 0 or self._running:
            return False
        return time.monotonic() - self._last_active >= timeout
