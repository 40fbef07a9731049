"""The worker's presence in the worker registry: a heartbeat record every ``registry_s``.

The record says who this worker is (id, host, version, start time), what it serves (queues, slots)
and what it is doing (busy slots, the attempts it runs). ``dagq workers``, ``GET /api/workers``,
the dashboard and ``dagq doctor`` read it; a worker whose record is not refreshed for
``DAGQ_WORKER_LOST_AFTER_S`` shows as lost. A clean stop removes the record.

Beside it, the worker keeps its machine's life (``shared.storage.machines``): since when the
machine counts, and its latest sign of life, every ``MACHINE_NOTE_EVERY_S`` and at a clean stop.
That row is kept, so ``dagq cost`` can report the pool's VM-hours after the VM is gone.

The registry is advisory: a failed write is logged and tried again at the next beat, and never
stops the worker from running tasks.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from importlib import metadata

from shared.errors import MessageError
from shared.messages import decode_task_message
from shared.names import safe_name_problem, workflow_id_problem
from shared.progress import TaskProgress
from shared.storage.machines import MACHINE_NOTE_EVERY_S, MachineLife, counts_from, kernel_boot
from shared.storage.ports import ReceivedMessage
from shared.storage.registry import GpuUse, Registry, WorkerRecord, WorkerTask
from shared.storage.tolerated import TOLERATED, Kind
from worker_agent.gpu_use import GpuSampler
from worker_agent.live import AttemptKey

log = logging.getLogger(__name__)


def dagq_version() -> str:
    """The installed dagq version ("unknown" when run from a tree that is not installed)."""
    try:
        return metadata.version("dagq")
    except metadata.PackageNotFoundError:
        return "unknown"


class Presence:
    """Writes one worker's registry record while the worker runs."""

    def __init__(
        self,
        registry: Registry,
        *,
        worker_id: str,
        queues: list[str],
        slots: int,
        interval_s: float,
        progress_s: float = 5.0,
        gpus: GpuSampler | None = None,
        vm_size: str = "",
        gpu_count: int = 0,
        clock: Callable[[], float] = time.time,
        retry_s: float = 1.0,
    ) -> None:
        self.registry = registry
        self.retry_s = retry_s
        """After a failed beat the next comes this soon, doubling up to ``interval_s``: a worker
        whose first beat failed is not missing from ``dagq workers`` for a whole interval."""
        self.worker_id = worker_id
        self.queues = list(queues)
        self.slots = slots
        self.interval_s = interval_s
        self.clock = clock
        self.started_at = clock()
        self.host = socket.gethostname()
        self.version = dagq_version()
        self._tasks: dict[int, WorkerTask | None] = {}
        self._busy_since: dict[int, float] = {}
        """Slot -> when it took its current task."""
        self._busy_s = 0.0
        """Busy slot-seconds of the tasks already finished."""
        self.progress_s = progress_s
        """Soonest a changed progress is sent after the previous heartbeat."""
        self.gpus = gpus or GpuSampler()
        self._gpu_use: list[GpuUse] = []
        self._progress: dict[AttemptKey, TaskProgress] = {}
        self.live_errors = 0
        """Failed reads of a running task's progress since the worker started (live.py)."""
        self._changed = asyncio.Event()
        boot = kernel_boot()
        self.machine = MachineLife(
            self.host,
            counts_from(self.started_at, boot),
            self.started_at,
            vm_size,
            gpu_count,
            boot=boot,
        )
        """This agent's machine boot, as last noted (``note_machine``)."""
        self._machine_noted: float | None = None

    def took(self, slot: int, received: ReceivedMessage) -> None:
        """Slot ``slot`` holds this task message now (shown by its ids, if it decodes)."""
        self._busy_since.setdefault(slot, self.clock())
        try:
            message = decode_task_message(received.text)
        except MessageError:  # the attempt runner dead-letters it; the slot is busy meanwhile
            self._tasks[slot] = None
            return
        if workflow_id_problem(message.workflow_id) or safe_name_problem(message.task):
            self._tasks[slot] = None
            return
        self._tasks[slot] = WorkerTask(
            message.workflow_id, message.task, message.attempt, incarnation=message.incarnation
        )

    def freed(self, slot: int) -> None:
        """Slot ``slot`` is free again."""
        since = self._busy_since.pop(slot, None)
        if since is not None:
            self._busy_s += max(0.0, self.clock() - since)
        task = self._tasks.pop(slot, None)
        if task is not None:
            self._progress.pop(AttemptKey(task.workflow_id, task.task, task.attempt), None)

    def progressed(self, key: AttemptKey, progress: TaskProgress) -> None:
        """A running attempt reported progress: send it with the next heartbeat, which comes
        sooner (but at most one every ``progress_s``)."""
        self._progress[key] = TaskProgress(progress.progress, dict(progress.metrics))
        self._changed.set()

    def live_error(self, key: AttemptKey) -> None:
        """Reading the progress of ``key`` failed (a task's doing): count it in the record."""
        self.live_errors += 1

    def _with_progress(self, task: WorkerTask) -> WorkerTask:
        progress = self._progress.get(AttemptKey(task.workflow_id, task.task, task.attempt))
        if progress is None:
            return task
        return replace(task, progress=progress)

    def record(self) -> WorkerRecord:
        """The record as of now."""
        now = self.clock()
        busy_s = self._busy_s + sum(max(0.0, now - since) for since in self._busy_since.values())
        return WorkerRecord(
            worker_id=self.worker_id,
            host=self.host,
            queues=self.queues,
            slots=self.slots,
            busy_slots=len(self._tasks),
            tasks=[
                self._with_progress(task)
                for _, task in sorted(self._tasks.items())
                if task is not None
            ],
            version=self.version,
            started_at=self.started_at,
            last_seen=now,
            interval_s=self.interval_s,
            busy_s=busy_s,
            gpus=list(self._gpu_use),
            live_errors=self.live_errors,
        )

    async def run(self) -> None:
        """Note the queues, then beat every ``interval_s`` (sooner when a task's progress
        changed, but not within ``progress_s`` of the previous beat) until cancelled."""
        noted = False
        failures = 0
        while True:
            self._changed.clear()
            try:
                self._gpu_use = await self.gpus.sample()
                if not noted:
                    await self.registry.note_queues(self.queues, self.clock())
                    noted = True
                await self.registry.beat(self.record())
                await self._note_machine()
                await TOLERATED.publish(self.registry, f"worker {self.worker_id}")
                failures = 0
            except Exception as exc:  # advisory: tried again soon, backing off to the interval
                TOLERATED.count(Kind.REGISTRY_BEAT, exc)
                failures += 1
                await asyncio.sleep(min(self.interval_s, self.retry_s * 2 ** (failures - 1)))
                continue
            await self._next_beat()

    async def _next_beat(self) -> None:
        """Wait for the next beat: ``interval_s``, or ``progress_s`` once progress changed."""
        soonest = min(self.progress_s, self.interval_s)
        await asyncio.sleep(soonest)
        with suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), self.interval_s - soonest)

    async def _note_machine(self, *, now_anyway: bool = False) -> None:
        """Refresh the machine's row when ``MACHINE_NOTE_EVERY_S`` passed (or at once, on a
        clean stop)."""
        now = self.clock()
        due = self._machine_noted is None or now - self._machine_noted >= MACHINE_NOTE_EVERY_S
        if due or now_anyway:
            self.machine = replace(self.machine, last_seen=now)
            await self.registry.note_machine(self.machine)
            self._machine_noted = now

    async def leave(self) -> None:
        """Remove this worker's record (a clean stop) and note its machine's end; a failure
        only leaves the record to show lost, and the machine counted to its previous note."""
        with suppress(Exception):
            await asyncio.wait_for(self._note_machine(now_anyway=True), timeout=10)
        with suppress(Exception):
            await asyncio.wait_for(self.registry.remove(self.worker_id), timeout=10)
