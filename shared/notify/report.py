"""What a notification says, read from storage when it is delivered: the workflow's id, name,
status, run, parameters, duration, failed tasks with their last log lines, the dashboard URL and
the cost (``Report``). ``confirm`` decides first whether the stored state bears the notification
out (the coordinator enqueues before it flushes: delivery waits for the flush, and drops what a
later write superseded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from shared.definition.workflow import CompiledWorkflow
from shared.engine.state import FAILED, RuntimeState
from shared.errors import NotFoundError
from shared.limits import MAX_NOTIFY_FAILED_TASKS, NOTIFY_LOG_LINES
from shared.messages import NotifyMessage
from shared.names import ResourceNames
from shared.storage.ports import Storage

TAIL_BYTES = 8192
"""Most bytes read from the end of a failed attempt's log."""

Verdict = Literal["deliver", "wait", "drop"]


@dataclass(frozen=True)
class FailedTask:
    """A task that failed for good, with the end of its last attempt's log."""

    name: str
    attempt: int
    exit_code: int | None
    error: str | None
    log_tail: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Report:
    """Everything a notification's body is made from (``shared.notify.bodies``)."""

    event: str
    workflow_id: str
    name: str
    status: str
    run: int
    params: dict[str, Any]
    created_at: float
    finished_at: float | None
    at: float
    url: str | None
    error: str | None
    task: FailedTask | None
    failed: list[FailedTask]
    failed_count: int
    cost: dict[str, Any] | None

    @property
    def duration_s(self) -> float | None:
        end = self.finished_at if self.finished_at is not None else self.at
        return round(max(0.0, end - self.created_at), 3)


def confirm(msg: NotifyMessage, wf: CompiledWorkflow, state: RuntimeState) -> Verdict:
    """Whether the stored state bears ``msg`` out: ``deliver``; ``wait`` (not flushed yet: try
    again later); ``drop`` (another incarnation, or superseded before it was ever stored)."""
    if msg.incarnation is not None and state.incarnation != msg.incarnation:
        return "drop"
    if state.run < msg.run:
        return "wait"
    if msg.event == "task_failed":
        i = wf.index.get(msg.task or "")  # expansions included: the workflow as it runs
        if i is None:
            return "drop"
        if state.run > msg.run or state.codes[i] == FAILED:
            return "deliver"
        return "wait"
    if state.run > msg.run:
        return "deliver"  # that run ended so (a rerun followed)
    if state.status.value == msg.event:
        return "deliver"
    return "drop" if state.status.is_terminal else "wait"


def dashboard_url(public_url: str | None, workflow_id: str) -> str | None:
    """The dashboard page of a run (``{public_url}/api/ui#/runs/{id}``), when the URL is known."""
    if not public_url:
        return None
    return f"{public_url.rstrip('/')}/api/ui#/runs/{workflow_id}"


async def build_report(
    storage: Storage,
    msg: NotifyMessage,
    wf: CompiledWorkflow,
    state: RuntimeState,
    *,
    public_url: str | None,
    cost: dict[str, Any] | None,
) -> Report:
    """The report of ``msg`` (``wf``: the workflow as it runs, expansions included)."""
    failed_numbers = [i for i, code in enumerate(state.codes) if code == FAILED]
    shown = failed_numbers[:MAX_NOTIFY_FAILED_TASKS]
    failed = [await _failed_task(storage, wf, state, i) for i in shown]
    task = None
    if msg.task is not None:
        task = next((f for f in failed if f.name == msg.task), None)
        if task is None and msg.task in wf.index:
            task = await _failed_task(storage, wf, state, wf.index[msg.task])
    return Report(
        event=msg.event,
        workflow_id=state.workflow_id,
        name=wf.name,
        status=state.status.value,
        run=msg.run,
        params=dict(wf.params),
        created_at=state.created_at,
        finished_at=state.finished_at,
        at=msg.at,
        url=dashboard_url(public_url, state.workflow_id),
        error=state.error,
        task=task,
        failed=failed,
        failed_count=len(failed_numbers),
        cost=cost,
    )


async def _failed_task(
    storage: Storage, wf: CompiledWorkflow, state: RuntimeState, i: int
) -> FailedTask:
    name, attempt = wf.tasks[i].name, state.attempt[i]
    return FailedTask(
        name=name,
        attempt=attempt,
        exit_code=state.exit_code[i],
        error=state.errors.get(i),
        log_tail=await log_tail(storage, state, name, attempt) if attempt else [],
    )


async def log_tail(
    storage: Storage, state: RuntimeState, task: str, attempt: int, lines: int = NOTIFY_LOG_LINES
) -> list[str]:
    """The last ``lines`` lines of an attempt's log (none if it left no log)."""
    blob = ResourceNames.log_blob(state.workflow_id, task, attempt, state.blob_incarnation)
    try:
        data, size = await storage.outputs.read_range(blob, 0, TAIL_BYTES)
        if size > TAIL_BYTES:
            data, _ = await storage.outputs.read_range(blob, size - TAIL_BYTES, TAIL_BYTES)
            data = data.partition(b"\n")[2]  # the first line read is cut
    except NotFoundError:
        return []
    text = data.decode("utf-8", "replace")
    return [line[:500] for line in text.splitlines()[-lines:]]
