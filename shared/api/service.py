"""The API's operations as plain async functions over the storage ports.

No HTTP here: each function takes a ``Storage`` bundle (Azure, or the in-memory fake in tests) and
returns response views (``shared.api.views``) or small result records; errors are dagq's
(``NotFoundError``, ``ConflictError``...) and carry their HTTP status.

The API writes a state blob only when it creates a workflow (one writer: docs/storage.md,
"Consistency model"). Afterwards it reads states and talks to the coordinator through control
events and the index's cancel flag.
"""

from __future__ import annotations

import dataclasses
import secrets
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from shared.errors import ConflictError, IncompleteSubmitError, InvalidIdError, NotFoundError
from shared.messages import ActivateEvent, CancelEvent, RetryEvent, encode
from shared.names import new_workflow_id, safe_name_problem, workflow_id_problem
from shared.partitions import partition_from_metadata, partition_metadata, partition_of
from shared.states import WorkflowStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from shared.api.views import (
        BlobOutput,
        Health,
        InlineOutput,
        TaskDetail,
        TaskSummary,
        Workflow,
        WorkflowPage,
        WorkflowSummary,
    )
    from shared.messages import OutputRef
    from shared.state import RuntimeState, TaskView
    from shared.storage.ports import IndexRow, Storage
    from shared.workflow import CompiledWorkflow

_ID_ALPHABET = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class Submission:
    """What submit did: ``created`` is False when an identical workflow already had this id."""

    workflow_id: str
    status: WorkflowStatus
    created: bool


@dataclass(frozen=True)
class ControlResult:
    """What cancel or retry did: the workflow's status as read, and whether an event was sent."""

    workflow_id: str
    status: WorkflowStatus
    sent: bool
    run: int


# -- loading -------------------------------------------------------------------------------------


def check_workflow_id(workflow_id: str) -> None:
    """Raise InvalidIdError if ``workflow_id`` cannot be a workflow id (no storage access)."""
    problem = workflow_id_problem(workflow_id)
    if problem:
        raise InvalidIdError(problem)


def check_task_name(task: str) -> None:
    """Raise InvalidIdError if ``task`` cannot be a task name (no storage access)."""
    problem = safe_name_problem(task)
    if problem:
        raise InvalidIdError(problem)


async def load_definition(storage: Storage, workflow_id: str) -> CompiledWorkflow:
    """The compiled definition of a workflow (cached: definition blobs never change)."""
    from shared.storage.definitions import load_definition as load_cached

    check_workflow_id(workflow_id)
    try:
        return await load_cached(storage, workflow_id)
    except NotFoundError:
        raise NotFoundError(f"workflow {workflow_id!r} not found") from None


async def load_workflow(
    storage: Storage, workflow_id: str
) -> tuple[CompiledWorkflow, RuntimeState]:
    """A workflow as it runs (its definition plus any ``foreach_from`` expansions) and its
    current state (the state blob is authoritative)."""
    from shared.codec import decode_state
    from shared.engine import expanded

    wf = await load_definition(storage, workflow_id)
    try:
        data, _etag = await storage.workflows.read_state(workflow_id)
    except NotFoundError:
        raise NotFoundError(
            f"workflow {workflow_id!r} was not completely submitted (its state is missing):"
            f" submit the same definition again with ?id={workflow_id} to finish it"
        ) from None
    state = decode_state(data, wf)
    return expanded(wf, state), state


# -- submit --------------------------------------------------------------------------------------


def generate_id(now: float) -> str:
    """A fresh, time-sortable workflow id."""
    entropy = "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))
    return new_workflow_id(now, entropy)


def same_definition(a: CompiledWorkflow, b: CompiledWorkflow) -> bool:
    """Whether two compiled workflows run the same DAG (the submitted text may differ in layout)."""
    return dataclasses.replace(a, source=None) == dataclasses.replace(b, source=None)


def compile_definition(
    text: str,
    fmt: Literal["json", "yaml"] | None = None,
    *,
    max_expansion_width: int | None = None,
) -> tuple[CompiledWorkflow, bytes]:
    """Validate a submitted definition and encode its definition blob (CPU-bound: the HTTP shell
    runs it in a thread). Raises DefinitionError listing every problem."""
    from shared.codec import encode_definition
    from shared.compiler import MAX_EXPANSIONS, load_workflow

    width = MAX_EXPANSIONS if max_expansion_width is None else max_expansion_width
    wf = load_workflow(text, source="request body", fmt=fmt, max_expansion_width=width)
    return wf, encode_definition(wf)


async def submit(
    storage: Storage,
    wf: CompiledWorkflow,
    *,
    now: float,
    workflow_id: str | None = None,
    encoded: bytes | None = None,
    partitions: int = 1,
) -> Submission:
    """Create a workflow from a validated definition, idempotently.

    Write order: definition blob (create-only), state blob (create-only), index row, activate
    event. Every step tolerates "already exists", so re-submitting the same id repairs a submit
    that crashed half-way. Same id with a different definition: ConflictError. ``encoded`` is
    the definition blob when the caller already has it (``compile_definition``). The workflow
    joins one of ``partitions`` partitions, recorded in its state metadata and index row, and its
    activate event goes to that partition's event queue.
    """
    from shared.codec import decode_definition, encode_definition

    data = encode_definition(wf) if encoded is None else encoded
    if workflow_id is not None:
        check_workflow_id(workflow_id)
        created = await storage.workflows.create_definition(workflow_id, data)
        if not created:
            existing = await storage.workflows.read_definition(workflow_id)
            if existing != data and not same_definition(decode_definition(existing), wf):
                raise ConflictError(
                    f"workflow {workflow_id!r} already exists with a different definition:"
                    " choose another id, or omit ?id= to get a generated one"
                )
    else:
        # A generated id colliding is next to impossible; a fresh one settles it anyway.
        for _ in range(5):
            workflow_id = generate_id(now)
            created = await storage.workflows.create_definition(workflow_id, data)
            if created:
                break
        else:  # pragma: no cover - five collisions of 36**6 random ids
            raise ConflictError("could not generate a unique workflow id; submit again")
    try:
        partition = partition_of(workflow_id, partitions)
        state, partition = await _create_state(storage, wf, workflow_id, now, partition)
        await storage.index.create(_index_row(wf, state, partition))
        if state.status is WorkflowStatus.PENDING:
            events = storage.for_partition(partition).event_queue
            await events.send(encode(ActivateEvent(workflow_id=workflow_id)))
    except Exception as exc:
        raise IncompleteSubmitError(workflow_id, exc) from exc
    return Submission(workflow_id=workflow_id, status=state.status, created=created)


async def _create_state(
    storage: Storage, wf: CompiledWorkflow, workflow_id: str, now: float, partition: int
) -> tuple[RuntimeState, int]:
    """Create the initial state blob in ``partition``, or return the existing one and the
    partition it recorded (a repeated submit, perhaps after the partition count changed)."""
    from shared.codec import decode_state, encode_state, state_metadata
    from shared.engine import new_state

    state = new_state(wf, workflow_id, now)
    metadata = state_metadata(state) | partition_metadata(partition)
    try:
        await storage.workflows.create_state(workflow_id, encode_state(state), metadata)
    except ConflictError:
        data, _etag = await storage.workflows.read_state(workflow_id)
        return decode_state(data, wf), await _partition(storage, workflow_id)
    return state, partition


async def _partition(storage: Storage, workflow_id: str) -> int:
    """The partition a workflow was given at submit (from its state blob's metadata)."""
    return partition_from_metadata(await storage.workflows.state_metadata(workflow_id))


def _index_row(wf: CompiledWorkflow, state: RuntimeState, partition: int) -> IndexRow:
    from shared.projection import index_row

    return dataclasses.replace(index_row(wf, state), partition=partition)


# -- read ----------------------------------------------------------------------------------------


def _output_view(ref: OutputRef | None, outputs_container: str) -> InlineOutput | BlobOutput | None:
    from shared.api.views import BlobOutput, InlineOutput

    if ref is None:
        return None
    if ref.blob is not None:
        return BlobOutput(blob=ref.blob, container=outputs_container, size=ref.size)
    return InlineOutput(inline=ref.inline, size=ref.size)


def _task_fields(wf: CompiledWorkflow, view: TaskView, i: int) -> dict[str, Any]:
    return {
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


def task_summary(wf: CompiledWorkflow, state: RuntimeState, i: int) -> TaskSummary:
    """One task's entry in a workflow view."""
    from shared.api.views import TaskSummary

    return TaskSummary(**_task_fields(wf, state.task(i), i))


def workflow_view(wf: CompiledWorkflow, state: RuntimeState, *, tasks: bool = True) -> Workflow:
    """``GET /api/workflows/{id}``: the workflow as its state blob says, tasks optional."""
    from shared.api.views import Workflow

    fields: dict[str, Any] = {
        "id": state.workflow_id,
        "name": wf.name,
        "status": state.status,
        "run": state.run,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "finished_at": state.finished_at,
        "cancel_requested": state.cancel_requested,
        "error": state.error,
        "total": len(wf.tasks),
        "counts": state.counts(),
    }
    if tasks:
        fields["tasks"] = {t.name: task_summary(wf, state, i) for i, t in enumerate(wf.tasks)}
    return Workflow(**fields)


async def get_workflow(storage: Storage, workflow_id: str, *, tasks: bool = True) -> Workflow:
    """A workflow's view, from its state blob."""
    wf, state = await load_workflow(storage, workflow_id)
    return workflow_view(wf, state, tasks=tasks)


def task_index(wf: CompiledWorkflow, workflow_id: str, task: str) -> int:
    """The number of task ``task``; InvalidIdError if malformed, NotFoundError if unknown."""
    check_task_name(task)
    i = wf.index.get(task)
    if i is None:
        raise NotFoundError(f"workflow {workflow_id!r} has no task {task!r}")
    return i


def task_detail(
    wf: CompiledWorkflow, state: RuntimeState, i: int, *, outputs_container: str
) -> TaskDetail:
    """``GET /api/workflows/{id}/tasks/{task}``: one task with its definition, output and log."""
    from shared.api.views import LogLocation, TaskDetail

    task = wf.tasks[i]
    view = state.task(i)
    log = LogLocation(container=outputs_container, blob=view.log_blob) if view.log_blob else None
    return TaskDetail(
        **_task_fields(wf, view, i),
        workflow_id=state.workflow_id,
        name=task.name,
        cmd=task.cmd,
        depends_on=[wf.tasks[p].name for p in task.parents],
        group=task.group,
        params=task.params,
        num_retries=task.num_retries,
        timeout_s=task.timeout_s,
        output=_output_view(view.output, outputs_container),
        log=log,
    )


async def get_task(
    storage: Storage, workflow_id: str, task: str, *, outputs_container: str
) -> TaskDetail:
    """One task's detail view, from the state blob."""
    wf, state = await load_workflow(storage, workflow_id)
    return task_detail(
        wf, state, task_index(wf, workflow_id, task), outputs_container=outputs_container
    )


async def read_task_blob(storage: Storage, workflow_id: str, task: str, what: str) -> bytes:
    """The current attempt's ``log`` text or ``output`` JSON of a task, from wherever it is."""
    import json

    wf, state = await load_workflow(storage, workflow_id)
    view = state.task(task_index(wf, workflow_id, task))
    if what == "log":
        if not view.log_blob:
            raise NotFoundError(f"task {task!r} of workflow {workflow_id!r} has no log yet")
        return await storage.outputs.get(view.log_blob)
    if view.output is None:
        raise NotFoundError(f"task {task!r} of workflow {workflow_id!r} has no output")
    if view.output.blob is not None:
        return await storage.outputs.get(view.output.blob)
    return json.dumps(view.output.inline).encode()


def row_view(row: IndexRow, url: str) -> WorkflowSummary:
    """One item of ``GET /api/workflows``, from the index; ``url`` is the workflow's URL."""
    from shared.api.views import WorkflowSummary

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
    from shared.api.views import WorkflowPage

    page = await storage.index.list(
        status=status, name_prefix=name_prefix, limit=limit, continuation=continuation
    )
    items = [row_view(r, url_for(r.workflow_id)) for r in page.rows]
    return WorkflowPage(items=items, next=page.next)


# -- control -------------------------------------------------------------------------------------


async def cancel(storage: Storage, workflow_id: str, *, reason: str | None = None) -> ControlResult:
    """Set the durable cancel flag, then send the cancel event. Idempotent; a finished workflow is
    left as it is."""
    wf, state = await load_workflow(storage, workflow_id)
    if state.status.is_terminal:
        return ControlResult(workflow_id, state.status, sent=False, run=state.run)
    partition = await _partition(storage, workflow_id)
    try:
        await storage.index.request_cancel(workflow_id, state.created_at)
    except NotFoundError:
        # The submit crashed before its index row: write it now, the flag needs a row.
        await storage.index.create(_index_row(wf, state, partition))
        await storage.index.request_cancel(workflow_id, state.created_at)
    events = storage.for_partition(partition).event_queue
    await events.send(encode(CancelEvent(workflow_id=workflow_id, reason=reason)))
    return ControlResult(workflow_id, state.status, sent=True, run=state.run)


async def retry(storage: Storage, workflow_id: str) -> ControlResult:
    """Rerun a failed or cancelled workflow from its failures. ConflictError otherwise."""
    wf, state = await load_workflow(storage, workflow_id)
    if not state.status.is_terminal:
        raise ConflictError(
            f"workflow {workflow_id!r} is {state.status}: it can be rerun once it has failed or"
            " been cancelled (cancel it first to rerun it now)"
        )
    if state.status is WorkflowStatus.COMPLETED:
        raise ConflictError(f"workflow {workflow_id!r} completed: there is nothing to rerun")
    partition = await _partition(storage, workflow_id)
    try:
        await storage.index.clear_cancel(workflow_id, state.created_at)
    except NotFoundError:
        await storage.index.create(_index_row(wf, state, partition))
        await storage.index.clear_cancel(workflow_id, state.created_at)
    events = storage.for_partition(partition).event_queue
    await events.send(encode(RetryEvent(workflow_id=workflow_id, run=state.run)))
    return ControlResult(workflow_id, state.status, sent=True, run=state.run)


# -- health --------------------------------------------------------------------------------------


async def health(storage: Storage) -> Health:
    """Storage reachability, whether a coordinator holds the lease, and event queue depths.

    Raises whatever the storage raises when it is unreachable (the HTTP shell answers 503).
    """
    from shared.api.views import CoordinatorHealth, Health, QueueDepth

    depth = await storage.event_queue.approximate_count()
    poison = await storage.event_poison_queue.approximate_count()
    lease_held = await storage.lease.is_held()
    return Health(
        status="ok",
        storage="reachable",
        coordinator=CoordinatorHealth(lease_held=lease_held),
        event_queue=QueueDepth(name=storage.event_queue.name, depth=depth),
        poison_queue=QueueDepth(name=storage.event_poison_queue.name, depth=poison),
    )
