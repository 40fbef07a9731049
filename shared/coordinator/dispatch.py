"""Carrying out the engine's Dispatch commands: build each task message and send it, concurrently,
in rounds (``dispatch_all``: an attempt whose message cannot be sent fails, which may dispatch its
retry; a cached task may complete from the result cache, which dispatches its children).

A task message carries its parents' output refs inline when the whole map fits the message budget;
otherwise (a sink with thousands of parents) the map is written once to the attempt's upstream blob
in the outputs container and the message points at it, so every message stays under 64 KiB.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from shared import engine
from shared.coordinator.lists import cached_list
from shared.coordinator.results import ResultCacheSteps
from shared.coordinator.tally import Tally
from shared.definition.templating import render_value
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.state import RuntimeState
from shared.errors import DispatchBoundError, DispatchError, MessageError
from shared.limits import ERROR_TAIL_CHARS
from shared.messages import TaskFailedEvent, TaskMessage, encode
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


def message_text(
    workflow_id: str,
    wf: CompiledWorkflow,
    command: Dispatch,
    partition: int,
    signer: Signer | None,
    upstream_blob: str | None = None,
) -> str:
    """The task message of one dispatch as sent: built (``build_message``), signed with the app's
    key when it has one, encoded. MessageError if it does not fit the message budget. The
    coordinator's dispatches and the submit's own dispatch of the roots
    (``shared.api.root_dispatch``) both send this."""
    message = build_message(workflow_id, wf, command, upstream_blob, partition)
    return encode(signer.sign(message) if signer is not None else message)


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
        partition = self._storage.partition
        try:
            text = message_text(workflow_id, wf, command, partition, self._signer)
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
            text = message_text(
                workflow_id, wf, command, self._storage.partition, self._signer, blob
            )
        except MessageError as exc:
            outcome.unsendable.append((command, f"task message too large to send: {exc}"))
            return ""
        if command.upstream:
            await self._storage.outputs.put(blob, upstream_json(command))
            outcome.upstream_blobs += 1
        return text


def dispatch_rounds(wf: CompiledWorkflow) -> int:
    """How many send rounds ``dispatch_all`` may need: every round but the last fails at least one
    attempt whose message cannot be sent or completes one from the result cache, and one run of
    the workflow has at most sum(num_retries + 1) attempts."""
    return sum(task.num_retries + 1 for task in wf.tasks) + 1


@dataclass
class DispatchStep:
    """What the dispatch step of one workflow update works on: the workflow and its state, the
    update's tally, what the pass already sent, the time the update applies, and the result
    cache's steps (None: no task is answered from the cache)."""

    workflow_id: str
    wf: CompiledWorkflow
    state: RuntimeState
    tally: Tally
    sent: set[SentKey]
    now: float
    results: ResultCacheSteps | None = None


async def dispatch_all(
    dispatcher: Dispatcher,
    may_send: Callable[[], bool],
    step: DispatchStep,
    commands: list[Command],
    max_rounds: int | None = None,
) -> None:
    """Send the dispatches among ``commands``. An attempt whose message cannot be sent at all
    fails (reason ``error``), which may dispatch its retry: rounds go on until no dispatch is
    left, at most ``max_rounds`` (default ``dispatch_rounds(wf)``) — if that is ever reached,
    DispatchBoundError (never a silently dropped dispatch). With ``results``, a dispatch of a
    cached task whose result is in the cache completes from it instead of being sent (its
    children's dispatches follow in the next round)."""
    workflow_id, wf, state, tally, now = step.workflow_id, step.wf, step.state, step.tally, step.now
    results = step.results
    rounds = dispatch_rounds(engine.expanded(wf, state)) if max_rounds is None else max_rounds
    for _ in range(rounds):
        dispatches = [c for c in commands if isinstance(c, Dispatch)]
        tally.finished += sum(isinstance(c, WorkflowFinished) for c in commands)
        if not dispatches:
            return
        if not may_send():
            raise DispatchError(f"sending the task messages of workflow {workflow_id} failed")
        # The workflow as it runs: the definition plus its foreach_from expansions.
        running = engine.expanded(wf, state)
        hits = await results.lookup_all(workflow_id, running, dispatches, now) if results else []
        answered = {id(hit.dispatch) for hit in hits}
        dispatches = [d for d in dispatches if id(d) not in answered]
        outcome = await dispatcher.send_all(workflow_id, running, dispatches, step.sent)
        tally.dispatched += outcome.sent
        tally.upstream_blobs += outcome.upstream_blobs
        if not outcome.ok:
            raise DispatchError(f"sending the task messages of workflow {workflow_id} failed")
        commands = []
        for hit in hits:
            lists = cached_list(wf, hit.completion, hit.payload)
            commands += engine.complete_from_cache(
                wf, state, hit.completion, hit.origin, now, lists=lists
            )
        tally.cache_hits += len(hits)
        for command, reason in outcome.unsendable:
            failure = TaskFailedEvent(
                workflow_id=workflow_id,
                task=command.name,
                attempt=command.attempt,
                incarnation=command.incarnation,
                finished_at=now,
                reason="error",
                error=reason[:ERROR_TAIL_CHARS],
            )
            commands += engine.apply(wf, state, failure, now)
    if any(isinstance(c, Dispatch) for c in commands):
        raise DispatchBoundError(
            f"dispatches of workflow {workflow_id} did not settle in {rounds} rounds"
        )
