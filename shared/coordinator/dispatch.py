"""Carrying out the engine's Dispatch commands: build each task message and send it, concurrently.

A task message carries its parents' output refs inline when the whole map fits the message budget;
otherwise (a sink with thousands of parents) the map is written once to the attempt's upstream blob
in the outputs container and the message points at it, so every message stays under 64 KiB.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.definition.templating import render_value
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Dispatch
from shared.errors import MessageError
from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.signing import Signer
from shared.storage.ports import Storage

log = logging.getLogger("dagq.coordinator")

SentKey = tuple[str, str, int]
"""(workflow, task, attempt): what a pass has already sent."""


def build_message(
    workflow_id: str,
    wf: CompiledWorkflow,
    command: Dispatch,
    upstream_blob: str | None = None,
    partition: int = 0,
) -> TaskMessage:
    """The task message of one dispatch (upstream inline unless ``upstream_blob`` is given); the
    worker reports to ``partition``'s event queue."""
    task = wf.tasks[command.task]
    return TaskMessage(
        workflow_id=workflow_id,
        task=command.name,
        attempt=command.attempt,
        queue=command.queue,
        cmd=task.cmd,
        env=dict(task.env),
        cwd=task.cwd,
        timeout_s=task.timeout_s,
        upstream=None if upstream_blob else (command.upstream or None),
        upstream_blob=upstream_blob,
        partition=partition,
        incarnation=command.incarnation,
        incarnation_blobs=True if command.incarnation_blobs else None,
        run=command.run,
        params={k: render_value(v) for k, v in wf.params.items()} if wf.params else None,
    )


def upstream_json(command: Dispatch) -> bytes:
    """The upstream blob's content: ``{parent: OutputRef}`` as JSON."""
    refs = command.upstream or {}
    return json.dumps(
        {name: ref.model_dump(mode="json", exclude_none=True) for name, ref in refs.items()},
        separators=(",", ":"),
    ).encode()


@dataclass
class DispatchOutcome:
    """What happened to one workflow's dispatches."""

    sent: int = 0
    failed: int = 0
    upstream_blobs: int = 0
    unsendable: list[tuple[Dispatch, str]] = field(default_factory=list)
    """Dispatches whose message cannot fit the budget even without upstream refs (a definition
    problem, e.g. an enormous cmd): the coordinator fails those attempts instead of sending."""

    @property
    def ok(self) -> bool:
        return self.failed == 0


class Dispatcher:
    """Sends task messages with bounded concurrency shared by every workflow of a pass."""

    def __init__(
        self,
        storage: Storage,
        names: ResourceNames,
        concurrency: int = 32,
        signer: Signer | None = None,
    ) -> None:
        self._storage = storage
        self._names = names
        self._slots = asyncio.Semaphore(concurrency)
        self._signer = signer

    def _signed(self, message: TaskMessage) -> TaskMessage:
        """``message`` signed with the app's key (``shared.signing``), when it has one."""
        return self._signer.sign(message) if self._signer is not None else message

    async def empty_queues(self, queues: Iterable[str]) -> frozenset[str]:
        """Which of these (definition) queues hold no message at all, visible or not: a queued
        attempt on one of them has lost its message (the lost-dispatch signal). A queue whose
        count cannot be read is not reported empty."""
        names = sorted(set(queues))

        async def count(queue: str) -> int:
            handle = self._storage.queues.get(self._names.task_queue(queue))
            try:
                return await handle.approximate_count()
            except Exception as exc:  # unknown is not empty: the daily backstop still holds
                log.warning("cannot count queue %s: %r", queue, exc)
                return -1

        counts = await asyncio.gather(*(count(queue) for queue in names))
        return frozenset(q for q, n in zip(names, counts, strict=True) if n == 0)

    async def send_all(
        self,
        workflow_id: str,
        wf: CompiledWorkflow,
        commands: Iterable[Dispatch],
        sent: set[SentKey],
    ) -> DispatchOutcome:
        """Send every command not in ``sent`` (adding the successful ones to it)."""
        outcome = DispatchOutcome()
        todo = [c for c in commands if (workflow_id, c.name, c.attempt) not in sent]
        if not todo:
            return outcome
        results = await asyncio.gather(
            *(self._send_one(workflow_id, wf, c, outcome) for c in todo), return_exceptions=True
        )
        for command, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                outcome.failed += 1
                log.warning(
                    "dispatch of %s/%s attempt %d to queue %s failed: %r",
                    workflow_id, command.name, command.attempt, command.queue, result,
                )  # fmt: skip
            elif result:
                sent.add((workflow_id, command.name, command.attempt))
                outcome.sent += 1
        return outcome

    async def _send_one(
        self, workflow_id: str, wf: CompiledWorkflow, command: Dispatch, outcome: DispatchOutcome
    ) -> bool:
        message = build_message(workflow_id, wf, command, partition=self._storage.partition)
        try:
            text = encode(self._signed(message))
        except MessageError:
            text = ""
        async with self._slots:
            if not text:
                text = await self._via_upstream_blob(workflow_id, wf, command, outcome)
                if not text:
                    return False
            queue = self._storage.queues.get(self._names.task_queue(command.queue))
            await queue.send(text, delay_s=command.delay_s)
        return True

    async def _via_upstream_blob(
        self, workflow_id: str, wf: CompiledWorkflow, command: Dispatch, outcome: DispatchOutcome
    ) -> str:
        blob = self._names.upstream_blob(
            workflow_id, command.name, command.attempt, command.blob_incarnation
        )
        try:
            message = build_message(
                workflow_id, wf, command, upstream_blob=blob, partition=self._storage.partition
            )
            text = encode(self._signed(message))
        except MessageError as exc:
            outcome.unsendable.append((command, f"task message too large to send: {exc}"))
            return ""
        if command.upstream:
            await self._storage.outputs.put(blob, upstream_json(command))
            outcome.upstream_blobs += 1
        return text
