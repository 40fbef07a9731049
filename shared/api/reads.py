"""The API's read operations: the views of workflows, tasks, listings and health.

Each function reads through the storage ports (the state blob for a workflow, the index for a
listing) and returns a response view of ``shared.views``; the HTTP shell serializes it.
Nothing here writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.api.task_reads import (
    LogSlice,
    live_progress,
    progress_fields,
    read_log,
    task_attempts,
)
from shared.errors import NotFoundError
from shared.names import ResourceNames, check_task_name
from shared.readback.workflow_reads import read_workflow
from shared.states import TaskState, WorkflowStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from shared.definition.workflow import CompiledWorkflow
    from shared.engine.state import RuntimeState, TaskView
    from shared.messages import OutputRef
    from shared.progress import TaskProgress
    from shared.storage.ports import IndexRow, Storage
    from shared.views import (
        AttemptList,
        BlobOutput,
        Health,
        InlineOutput,
        PartitionHealth,
        TaskDetail,
        TaskSummary,
        Workflow,
        WorkflowPage,
        WorkflowSummary,
    )

    Progress = dict[tuple[str, int], TaskProgress]

# -- read ----------------------------------------------------------------------------------------


def _output_view(
    ref: OutputRef | None, outputs_container: str, blob: str
) -> InlineOutput | BlobOutput | None:
    from shared.views import BlobOutput, InlineOutput

    if ref is None:
        return None
    if ref.blob is not None:
        return BlobOutput(blob=blob, container=outputs_container, size=ref.size)
    return InlineOutput(inline=ref.inline, size=ref.size)


def _task_fields(wf: CompiledWorkflow, view: TaskView, i: int) -> dict[str, Any]:
    fields = _cache_fields(view)
    return fields | {
        "state": view.state,
        "attempt": view.attempt,
        "queue": wf.tasks[i].queue,
        "queued_at": view.queued_at,
        "started_at": view.started_at,
        "finished_at": view.finished_at,
        "exit_code": view.exit_code,
        "error": view.error,
        "worker": view.worker,
    }


def _cache_fields(view: TaskView) -> dict[str, Any]:
    """``cached_from``, only for a task whose result came from the result cache."""
    from shared.views import CachedFromView

    origin = view.cached_from
    return {} if origin is None else {"cached_from": CachedFromView(**origin.model_dump())}


def task_summary(
    wf: CompiledWorkflow, state: RuntimeState, i: int, progress: Progress | None = None
) -> TaskSummary:
    """One task's entry in a workflow view (with its running attempt's ``progress``)."""
    from shared.views import TaskSummary

    live = progress_fields(progress or {}, state, i, wf.tasks[i].name)
    return TaskSummary(**_task_fields(wf, state.task(i), i), **live)


def workflow_view(
    wf: CompiledWorkflow,
    state: RuntimeState,
    *,
    tasks: bool = True,
    progress: Progress | None = None,
) -> Workflow:
    """``GET /api/workflows/{id}``: the workflow as its state blob says, tasks optional."""
    from shared.views import Workflow

    fields: dict[str, Any] = {
        "id": state.workflow_id,
        "name": wf.name,
        "notify": notify_views(wf),  # issue 29: the run's webhooks, by host
        "status": state.status,
        "run": state.run,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "finished_at": state.finished_at,
        "cancel_requested": state.cancel_requested,
        "error": state.error,
        "total": len(wf.tasks),
        "counts": state.counts(),
        "params": wf.params,
    }
    if tasks:
        fields["tasks"] = {
            t.name: task_summary(wf, state, i, progress) for i, t in enumerate(wf.tasks)
        }
    return Workflow(**fields)


def notify_views(wf: CompiledWorkflow) -> list[dict[str, Any]]:
    """What a workflow's view shows of its webhooks: host, events, format, whether signed."""
    from urllib.parse import urlsplit

    return [
        {
            "host": urlsplit(t.url).hostname or "",
            "events": list(t.events),
            "format": t.format,
            "signed": t.secret is not None,
        }
        for t in wf.notify
    ]


async def get_workflow(storage: Storage, workflow_id: str, *, tasks: bool = True) -> Workflow:
    """A workflow's view, from its state blob."""
    wf, state = await read_workflow(storage, workflow_id)
    progress = await live_progress(storage, state) if tasks else None
    return workflow_view(wf, state, tasks=tasks, progress=progress)


def task_index(wf: CompiledWorkflow, workflow_id: str, task: str) -> int:
    """The number of task ``task``; InvalidIdError if malformed, NotFoundError if unknown."""
    check_task_name(task)
    i = wf.index.get(task)
    if i is None:
        raise NotFoundError(f"workflow {workflow_id!r} has no task {task!r}")
    return i


def task_detail(
    wf: CompiledWorkflow,
    state: RuntimeState,
    i: int,
    *,
    outputs_container: str,
    progress: Progress | None = None,
) -> TaskDetail:
    """``GET /api/workflows/{id}/tasks/{task}``: one task with its definition, output and log."""
    from shared.views import LogLocation, TaskDetail

    task = wf.tasks[i]
    view = state.task(i)
    log_blob = _attempt_blob(state, task.name, view.attempt, "log")
    has_log = view.log_blob is not None or view.state is TaskState.RUNNING
    log = LogLocation(container=outputs_container, blob=log_blob) if has_log else None
    output_blob = _attempt_blob(state, task.name, view.attempt, "output")
    return TaskDetail(
        **_task_fields(wf, view, i),
        **progress_fields(progress or {}, state, i, task.name),
        workflow_id=state.workflow_id,
        name=task.name,
        cmd=task.cmd,
        depends_on=[wf.tasks[p].name for p in task.parents],
        group=task.group,
        params=task.params,
        num_retries=task.num_retries,
        timeout_s=task.timeout_s,
        output=_output_view(view.output, outputs_container, output_blob),
        log=log,
    )


async def get_task(
    storage: Storage, workflow_id: str, task: str, *, outputs_container: str
) -> TaskDetail:
    """One task's detail view, from the state blob."""
    wf, state = await read_workflow(storage, workflow_id)
    i = task_index(wf, workflow_id, task)
    progress = await live_progress(storage, state)
    return task_detail(wf, state, i, outputs_container=outputs_container, progress=progress)


async def get_attempts(
    storage: Storage, workflow_id: str, task: str, *, outputs_container: str
) -> AttemptList:
    """``GET .../tasks/{task}/attempts``: every attempt of a task, oldest first."""
    wf, state = await read_workflow(storage, workflow_id)
    i = task_index(wf, workflow_id, task)
    return task_attempts(wf, state, i, outputs_container=outputs_container)


async def get_log(
    storage: Storage, workflow_id: str, task: str, *, attempt: int | None, offset: int
) -> LogSlice:
    """``GET .../tasks/{task}/log``: what exists so far of an attempt's log."""
    wf, state = await read_workflow(storage, workflow_id)
    i = task_index(wf, workflow_id, task)
    return await read_log(storage, wf, state, i, attempt=attempt, offset=offset)


def _attempt_blob(state: RuntimeState, task: str, attempt: int, what: str) -> str:
    """A task attempt's log or output blob, named from validated ids (never a stored string: an
    event could once carry any name)."""
    if what == "log":
        return ResourceNames.log_blob(state.workflow_id, task, attempt, state.blob_incarnation)
    return ResourceNames.output_blob(state.workflow_id, task, attempt, state.blob_incarnation)


async def read_task_output(storage: Storage, workflow_id: str, task: str) -> bytes:
    """The current attempt's output JSON of a task, from wherever it is."""
    import json

    wf, state = await read_workflow(storage, workflow_id)
    view = state.task(task_index(wf, workflow_id, task))
    if view.output is None:
        raise NotFoundError(f"task {task!r} of workflow {workflow_id!r} has no output")
    if view.output.blob is not None:
        return await storage.outputs.get(_attempt_blob(state, task, view.attempt, "output"))
    return json.dumps(view.output.inline).encode()


def row_view(row: IndexRow, url: str) -> WorkflowSummary:
    """One item of ``GET /api/workflows``, from the index; ``url`` is the workflow's URL."""
    from shared.views import WorkflowSummary

    return WorkflowSummary(
        id=row.workflow_id,
        name=row.name,
        status=row.status,
        run=row.run,
        created_at=row.created_at,
        updated_at=row.updated_at,
        finished_at=row.finished_at,
        total=row.total,
        counts=row.counts,
        queues=row.queues,
        cancel_requested=row.cancel_requested,
        error=row.error,
        url=url,
    )


async def list_workflows(
    storage: Storage,
    *,
    url_for: Callable[[str], str],
    status: WorkflowStatus | None = None,
    name_prefix: str | None = None,
    limit: int = 50,
    continuation: str | None = None,
) -> WorkflowPage:
    """``GET /api/workflows``: newest first from the index, ``next`` continues the listing;
    ``url_for(id)`` is a workflow's URL."""
    from shared.views import WorkflowPage

    page = await storage.index.list(
        status=status, name_prefix=name_prefix, limit=limit, continuation=continuation
    )
    items = [row_view(r, url_for(r.workflow_id)) for r in page.rows]
    return WorkflowPage(items=items, next=page.next)


# -- health --------------------------------------------------------------------------------------


async def health(storage: Storage, partitions: int = 1) -> Health:
    """Storage reachability, and each of the ``partitions`` partitions' event and poison queue
    depths and whether a coordinator holds its lease (read concurrently; the top-level fields are
    partition 0's).

    Raises whatever the storage raises when it is unreachable (the HTTP shell answers 503).
    """
    import asyncio

    from shared.views import CoordinatorHealth, Health

    views = await asyncio.gather(
        *(_partition_health(storage.for_partition(p)) for p in range(partitions))
    )
    first = views[0]
    return Health(
        status="ok",
        storage="reachable",
        coordinator=CoordinatorHealth(lease_held=first.lease_held),
        event_queue=first.event_queue,
        poison_queue=first.poison_queue,
        partitions=list(views),
    )


async def _partition_health(storage: Storage) -> PartitionHealth:
    """One partition's queue depths and lease (``storage`` is that partition's view)."""
    import asyncio

    from shared.views import PartitionHealth, QueueDepth

    depth, poison, lease_held = await asyncio.gather(
        storage.event_queue.approximate_count(),
        storage.event_poison_queue.approximate_count(),
        storage.lease.is_held(),
    )
    return PartitionHealth(
        partition=storage.partition,
        event_queue=QueueDepth(name=storage.event_queue.name, depth=depth),
        poison_queue=QueueDepth(name=storage.event_poison_queue.name, depth=poison),
        lease_held=lease_held,
    )
