"""A synthetic worker for tests and benchmarks: takes task messages, posts events per a script.

It speaks the real protocol over the storage ports (any ``Storage``: the in-memory fakes or Azure on
Azurite) without running processes: receive a task message, claim the attempt (like the real worker,
so duplicate dispatches are dropped), optionally post ``started``, "run" for the scripted duration
(optionally watching the state blob's status for a cancel), post ``completed`` or ``failed``, and
only then delete the task message.

    worker = SyntheticWorker(storage, names, ["cpu"], {"train": Behavior(fail_times=2)})
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    ...
    stop.set(); await task

Scripts map task names (fnmatch patterns, first match wins; ``*`` is the default) to a Behavior,
and may be changed while the worker runs (e.g. make a failing task succeed before a rerun).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from shared.errors import MessageError, NotFoundError
from shared.limits import ERROR_TAIL_CHARS
from shared.messages import (
    INLINE_OUTPUT_BYTES,
    OutputRef,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskMessage,
    TaskStartedEvent,
    decode_task_message,
    encode,
)
from shared.names import ResourceNames
from shared.storage.ports import Queue, ReceivedMessage, Storage
from worker_agent.outbox import EventOutbox

log = logging.getLogger("dagq.synthetic_worker")

OutputFn = Callable[[TaskMessage, dict[str, JsonValue]], JsonValue]
"""Computes a task's output from its message and its parents' output values."""


@dataclass(frozen=True)
class Behavior:
    """What a task does when the synthetic worker "runs" it."""

    fail_times: int = 0
    """Attempts up to this number fail (exit ``exit_code``); later attempts succeed."""
    always_fail: bool = False
    exit_code: int = 1
    duration_s: float = 0.0
    """How long the task "runs" (slow tasks; cancel tests)."""
    output: JsonValue | OutputFn = None
    """The task's JSON output (None: no output), or a function of message and upstream values."""
    report_started: bool = False
    """Post a ``started`` event before running (the real worker does so after a few seconds)."""
    error: str = "synthetic failure"

    def fails(self, attempt: int) -> bool:
        return self.always_fail or attempt <= self.fail_times


@dataclass
class Execution:
    """One attempt the worker ran."""

    message: TaskMessage
    upstream: dict[str, JsonValue]
    outcome: str
    """``completed``, ``failed`` or ``cancelled``."""


@dataclass
class SyntheticWorker:
    """Takes task messages from ``queues`` (definition queue names) and reports per ``script``."""

    storage: Storage
    names: ResourceNames
    queues: Sequence[str]
    script: dict[str, Behavior] = field(default_factory=dict)
    worker_id: str = "synthetic"
    concurrency: int = 32
    visibility_s: int = 60
    claim: bool = True
    """Claim each attempt with its claim blob and drop duplicate dispatches (as the real worker)."""
    watch_cancel: bool = False
    """Read the state blob's status before and while running; stop with ``cancelled`` if the
    workflow is cancelling or cancelled (as the real worker)."""
    poll_s: float = 0.05
    clock: Callable[[], float] = time.time

    executions: Counter[str] = field(default_factory=Counter)
    """``{workflow}/{task}/{attempt}`` -> times this worker ran it (must never exceed 1)."""
    history: list[Execution] = field(default_factory=list)
    duplicates_dropped: int = 0
    malformed: int = 0
    running: int = 0
    max_running: int = 0
    on_event_sent: Callable[[str], None] | None = None
    """Called with the attempt key right after each completed/failed event is sent (bench)."""
    _partitions: dict[tuple[str, str, int], int] = field(default_factory=dict, repr=False)
    """Attempt -> the partition its task message named (where its events go)."""
    batch_reports: bool = True
    """Send the events that are ready together as one message, as the real worker does
    (``worker_agent.outbox``); False: one message per event (tests that script messages)."""
    outbox: EventOutbox = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.outbox = EventOutbox(self._send_text)

    async def _send_text(self, partition: int, text: str, _events: int) -> None:
        await self.storage.for_partition(partition).event_queue.send(text)

    def behavior(self, task: str) -> Behavior:
        for pattern, behavior in self.script.items():
            if fnmatch.fnmatchcase(task, pattern):
                return behavior
        return Behavior()

    # -- loop --------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then finish what is in flight."""
        handles = [self.storage.queues.get(self.names.task_queue(q)) for q in self.queues]
        inflight: set[asyncio.Task[None]] = set()
        idle = self.poll_s / 4
        while not stop.is_set():
            free = self.concurrency - len(inflight)
            if free <= 0:
                await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                continue
            got = 0
            for queue in handles:
                try:
                    messages = await queue.receive(min(32, free), self.visibility_s)
                except Exception as exc:
                    log.warning("receive from %s failed: %r", queue.name, exc)
                    messages = []
                for message in messages:
                    task = asyncio.create_task(self._handle(queue, message))
                    inflight.add(task)
                    task.add_done_callback(inflight.discard)
                got += len(messages)
                free -= len(messages)
                if free <= 0:
                    break
            if got:
                idle = self.poll_s / 4
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=idle)
                idle = min(idle * 2, self.poll_s)
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)

    async def step(self) -> int:
        """Handle every message visible now on the worker's queues (for tests that drive time
        themselves); return how many were handled."""
        handles = [self.storage.queues.get(self.names.task_queue(q)) for q in self.queues]
        total = 0
        while True:
            batch: list[tuple[Queue, ReceivedMessage]] = []
            for queue in handles:
                batch += [(queue, m) for m in await queue.receive(32, self.visibility_s)]
            if not batch:
                return total
            await asyncio.gather(*(self._handle(queue, m) for queue, m in batch))
            total += len(batch)

    async def _handle(self, queue: Queue, received: ReceivedMessage) -> None:
        try:
            await self._handle_unguarded(queue, received)
        except Exception:  # leave the message: it is redelivered after its visibility timeout
            log.exception("synthetic worker failed on message %s", received.id)

    async def _handle_unguarded(self, queue: Queue, received: ReceivedMessage) -> None:
        try:
            message = decode_task_message(received.text)
        except MessageError:
            self.malformed += 1
            await queue.delete(received)
            return
        key = message.key
        self._partitions[(message.workflow_id, message.task, message.attempt)] = message.partition
        if self.claim:
            claim = message.claim_blob()
            if not await self.storage.outputs.create_if_absent(claim, received.id.encode()):
                owner = await self.storage.outputs.get(claim)
                if owner.decode() != received.id:
                    self.duplicates_dropped += 1
                    await queue.delete(received)
                    return
        if self.watch_cancel and (wait := await self._state_wait(message, received)):
            await queue.extend(received, wait)  # no state yet: a submit sends the roots first
            return
        self.executions[key] += 1
        behavior = self.behavior(message.task)
        started_at = self.clock()
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            if await self._cancelled(message):
                await self._report_cancelled(message, started_at, {})
                await queue.delete(received)
                return
            upstream = await self._upstream(message)
            if behavior.report_started:
                await self._send(
                    TaskStartedEvent(
                        **message.report_fields(), worker=self.worker_id, started_at=started_at,
                    )
                )  # fmt: skip
            if await self._run_for(message, behavior.duration_s):
                await self._report_cancelled(message, started_at, upstream)
            elif behavior.fails(message.attempt):
                self.history.append(Execution(message, upstream, "failed"))
                await self._send(
                    TaskFailedEvent(
                        **message.report_fields(), worker=self.worker_id, started_at=started_at,
                        finished_at=self.clock(), reason="exit", exit_code=behavior.exit_code,
                        error=behavior.error[:ERROR_TAIL_CHARS],
                    )
                )  # fmt: skip
            else:
                value = behavior.output
                if callable(value):
                    value = value(message, upstream)
                output = await self._output(message, value)
                self.history.append(Execution(message, upstream, "completed"))
                await self._send(
                    TaskCompletedEvent(
                        **message.report_fields(), worker=self.worker_id, started_at=started_at,
                        finished_at=self.clock(), output=output,
                    )
                )  # fmt: skip
            if self.on_event_sent is not None:
                self.on_event_sent(key)
        finally:
            self.running -= 1
        await queue.delete(received)

    # -- pieces ------------------------------------------------------------------------------

    async def _send(self, event: TaskStartedEvent | TaskCompletedEvent | TaskFailedEvent) -> None:
        # The event goes to the partition the task message named, as the real worker's does.
        partition = self._partitions.get((event.workflow_id, event.task, event.attempt), 0)
        if self.batch_reports:
            await self.outbox.post(encode(event), partition)
        else:
            await self._send_text(partition, encode(event), 1)

    async def _state_wait(self, message: TaskMessage, received: ReceivedMessage) -> int:
        """As the real worker: how long to hand back a young message whose workflow's state blob
        does not exist yet (``worker_agent.workflow_check.state_wait_s``); 0 to go on."""
        from worker_agent.workflow_check import state_wait_s

        try:
            await self.storage.workflows.state_metadata(message.workflow_id)
        except NotFoundError:
            return state_wait_s(received, time.time())
        return 0

    async def _cancelled(self, message: TaskMessage) -> bool:
        if not self.watch_cancel:
            return False
        try:
            meta = await self.storage.workflows.state_metadata(message.workflow_id)
        except NotFoundError:
            return True
        return meta.get("status") in ("cancelling", "cancelled")

    async def _run_for(self, message: TaskMessage, duration_s: float) -> bool:
        """Sleep ``duration_s`` (watching for a cancel); True if cancelled meanwhile."""
        deadline = time.monotonic() + duration_s
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, self.poll_s * 4))
            if await self._cancelled(message):
                return True
        return False

    async def _report_cancelled(
        self, message: TaskMessage, started_at: float, upstream: dict[str, JsonValue]
    ) -> None:
        self.history.append(Execution(message, upstream, "cancelled"))
        await self._send(
            TaskFailedEvent(
                **message.report_fields(), worker=self.worker_id, started_at=started_at,
                finished_at=self.clock(),
                reason="cancelled", error="workflow cancelled",
            )
        )  # fmt: skip

    async def _upstream(self, message: TaskMessage) -> dict[str, JsonValue]:
        refs: Mapping[str, OutputRef] = message.upstream or {}
        if message.upstream_blob:
            raw = json.loads(await self.storage.outputs.get(message.upstream_blob))
            refs = {name: OutputRef.model_validate(ref) for name, ref in raw.items()}
        values: dict[str, JsonValue] = {}
        for name, ref in refs.items():
            if ref.blob:
                values[name] = json.loads(await self.storage.outputs.get(ref.blob))
            else:
                values[name] = ref.inline
        return values

    async def _output(self, message: TaskMessage, value: JsonValue) -> OutputRef | None:
        if value is None:
            return None
        data = json.dumps(value, separators=(",", ":")).encode()
        if len(data) <= INLINE_OUTPUT_BYTES:
            return OutputRef(inline=value, size=len(data))
        blob = self.names.output_blob(
            message.workflow_id, message.task, message.attempt, message.blob_incarnation
        )
        await self.storage.outputs.put(blob, data)
        return OutputRef(blob=blob, size=len(data), sha256=hashlib.sha256(data).hexdigest())
