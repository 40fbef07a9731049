"""The HTTP API's response shapes, defined once (pydantic).

The API builds every JSON answer from these models (``shared.api.service``), the client parses the
answers with them (``shared.client``), and the component schemas of ``shared/api/openapi.json`` are
generated from them (``python -m shared.api.openapi``); tests keep the three in step.

Conventions: a field without a default is always sent (it may be ``null`` when its type says so);
a field with a default is sent only when it applies (``tasks`` is left out with ``?tasks=false``,
``detail`` is sent by a cancel that had nothing to do). ``dump`` serializes an answer (JSON
mode, unset defaults left out). Unknown fields are kept: a client tolerates fields a newer server
adds.

Adding an endpoint: define its answer here (a ``View`` subclass with a docstring and field docs),
build it in ``service``, list it in ``COMPONENTS`` and the path in ``shared.api.openapi``, and
regenerate the document (see docs/api.md). This module imports pydantic: the HTTP shell imports it
on first use, never when ``function_app`` is imported.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from shared.states import TERMINAL_TASK_STATES, TaskState, WorkflowStatus


class View(BaseModel):
    """Base of the response models."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)


def dump(view: View) -> dict[str, Any]:
    """The JSON body of ``view``: defaults that were not set are left out."""
    return view.model_dump(mode="json", exclude_unset=True)


Epoch = float
"""Unix time in seconds."""


class Submitted(View):
    """``POST /workflows``: the workflow that was created (201) or found (200)."""

    id: str
    status: WorkflowStatus
    url: str
    """The workflow's URL (also the ``Location`` header)."""


class TaskSummary(View):
    """One task of a workflow, as ``GET /workflows/{id}`` lists it."""

    state: TaskState
    attempt: int
    """0 for a task never dispatched; attempt numbers only grow (also across reruns)."""
    queue: str
    queued_at: Epoch | None
    """When the current attempt's message became visible to workers (after any retry delay)."""
    started_at: Epoch | None
    finished_at: Epoch | None
    exit_code: int | None
    error: str | None
    """Why the task failed or was skipped."""
    worker: str | None
    """The worker that reported the current attempt."""


class InlineOutput(View):
    """A small output, stored in the state."""

    inline: JsonValue
    size: int
    """Bytes of its JSON encoding."""


class BlobOutput(View):
    """A large output, stored as a blob."""

    blob: str
    container: str
    size: int
    """Bytes of its JSON encoding."""


class LogLocation(View):
    """Where the log of the task's latest attempt is."""

    container: str
    blob: str


class TaskDetail(TaskSummary):
    """``GET /workflows/{id}/tasks/{task}``: one task with its definition, output and log."""

    workflow_id: str
    name: str
    cmd: str
    depends_on: list[str]
    group: str | None
    """The foreach group a task was expanded from."""
    params: dict[str, JsonValue] | None
    """The foreach values of an expanded task."""
    num_retries: int
    timeout_s: float | None
    output: InlineOutput | BlobOutput | None
    log: LogLocation | None


class WorkflowBase(View):
    """What a workflow summary and a workflow have in common."""

    id: str
    name: str
    status: WorkflowStatus
    run: int
    """1 at submit, +1 for each rerun from failure."""
    created_at: Epoch
    updated_at: Epoch
    finished_at: Epoch | None
    total: int
    """The number of tasks."""
    counts: dict[str, int]
    """Task state -> number of tasks in it."""
    cancel_requested: bool
    error: str | None

    @property
    def is_terminal(self) -> bool:
        """Completed, failed or cancelled."""
        return WorkflowStatus(self.status).is_terminal

    @property
    def finished(self) -> int:
        """Tasks in a terminal state."""
        return sum(n for state, n in self.counts.items() if state in TERMINAL_TASK_STATES)


class WorkflowSummary(WorkflowBase):
    """One item of ``GET /workflows``, from the index (it may lag the state by a moment)."""

    queues: list[str]
    url: str


class Workflow(WorkflowBase):
    """``GET /workflows/{id}``: the workflow as its state blob says (authoritative)."""

    tasks: dict[str, TaskSummary] = Field(default_factory=dict)
    """Task name -> task; left out with ``?tasks=false``."""


class WorkflowPage(View):
    """``GET /workflows``: one page, newest first."""

    items: list[WorkflowSummary]
    next: str | None
    """The continuation token of the next page; null on the last page."""


class Accepted(View):
    """What cancel and retry answer (202)."""

    id: str
    status: WorkflowStatus
    """The workflow's status when the request was accepted."""
    url: str


class CancelAccepted(Accepted):
    """``POST /workflows/{id}/cancel``."""

    cancel_requested: bool
    """False when the workflow had already finished (nothing to cancel)."""
    detail: str | None = None
    """Why nothing was done, when nothing was."""


class RetryAccepted(Accepted):
    """``POST /workflows/{id}/retry``."""

    run: int
    """The number of the run that will start."""


class QueueDepth(View):
    """A queue and its approximate number of messages."""

    name: str
    depth: int


class CoordinatorHealth(View):
    """Whether a coordinator holds the lease right now."""

    lease_held: bool


class PartitionHealth(View):
    """One partition's event queue, poison queue and coordinator lease."""

    partition: int
    event_queue: QueueDepth
    poison_queue: QueueDepth
    lease_held: bool


class Health(View):
    """``GET /health`` when storage answers (200).

    ``coordinator``, ``event_queue`` and ``poison_queue`` are partition 0's (as before partitions
    existed); ``partitions`` has every partition of the deployment, 0 first.
    """

    status: Literal["ok"]
    storage: Literal["reachable"]
    coordinator: CoordinatorHealth
    event_queue: QueueDepth
    poison_queue: QueueDepth
    partitions: list[PartitionHealth]


class HealthUnavailable(View):
    """``GET /health`` when storage does not answer or is not configured (503)."""

    status: Literal["unavailable"]
    storage: Literal["unreachable"]
    error: str


class GraphTask(View):
    """One task of a workflow's graph."""

    name: str
    queue: str
    group: str | None
    """The foreach task this one was expanded from."""
    parents: list[int]
    """Indices into the graph's ``tasks``."""


class Graph(View):
    """``GET /workflows/{id}/graph``: the DAG's structure (for the dashboard; it never changes)."""

    id: str
    name: str
    tasks: list[GraphTask]


class IssueView(View):
    """One problem of an invalid definition."""

    location: str
    task: str | None
    message: str


class Problem(View):
    """An RFC 7807 problem document: every error answer (``application/problem+json``)."""

    type: str
    """``https://dagq.dev/problems/{slug}``; the slugs are listed in docs/api.md."""
    title: str
    status: int
    detail: str
    instance: str | None = None
    """The request path."""
    ref: str | None = None
    """A 500's reference in the app's log."""
    errors: list[IssueView] | None = None
    """Every problem of an invalid definition."""
    id: str | None = None
    """``incomplete-submit``: the workflow to complete with ``?id=``."""


# -- operations: workers, doctor, purge (docs/operations.md) -----------------------------------


class WorkerTaskView(View):
    """An attempt a worker runs."""

    workflow_id: str
    task: str
    attempt: int


class WorkerView(View):
    """One worker agent, from its latest registry heartbeat."""

    worker_id: str
    host: str
    queues: list[str]
    """Queues it polls, highest priority first."""
    slots: int
    busy_slots: int
    tasks: list[WorkerTaskView] = Field(default_factory=list)
    version: str
    started_at: Epoch
    last_seen: Epoch
    """The worker's own clock at its latest heartbeat (epoch seconds)."""
    status: Literal["alive", "lost"]


class WorkersView(View):
    """``GET /api/workers``."""

    workers: list[WorkerView]
    lost_after_s: float
    """A worker not seen for this long is ``lost``."""


class PurgedView(View):
    """``DELETE /api/workflows/{id}``: what was purged."""

    id: str
    status: str
    """The workflow's final status (``purging`` when an interrupted purge was finished)."""
    purged: bool = True
    blobs_deleted: int
    """Output, log, upstream and claim blobs deleted."""


class PurgedItem(View):
    """One workflow a bulk purge deleted (or, in a dry run, would delete)."""

    id: str
    name: str
    status: str
    finished_at: float | None


class PurgeReport(View):
    """``POST /api/purge``: one step of a bulk purge."""

    dry_run: bool
    older_than_s: float
    statuses: list[str]
    workflows: list[PurgedItem]
    """Purged in this step (in a dry run: those that would be)."""
    resumed: list[str]
    """Ids of interrupted purges found (and finished, unless this is a dry run)."""
    next: str | None
    """Pass back as ``next`` to go on; None when the scan is done."""


class DoctorFinding(View):
    """One problem ``dagq doctor`` found, with how to fix it."""

    check: str
    """Which check found it (``unserved_queue``, ``lost_dispatch``, ...; docs/operations.md)."""
    severity: Literal["error", "warning", "info"]
    """``error`` and ``warning`` make the report unhealthy; ``info`` does not."""
    subject: str | None = None
    """The queue, workflow, worker or partition it is about."""
    title: str
    detail: str
    fix: str


class DoctorSummary(View):
    """What the doctor looked at."""

    workers_alive: int
    workers_lost: int
    active_workflows: int
    examined_workflows: int
    queued_tasks: int
    queue_depths: dict[str, int]
    """Definition queue name -> messages on it (visible or not)."""
    partitions: int
    workflow_status: str | None = None
    """With an id: that workflow's status."""


class DoctorReport(View):
    """``GET /api/doctor[?id=]``."""

    healthy: bool
    checked_at: float
    workflow_id: str | None
    findings: list[DoctorFinding]
    summary: DoctorSummary


COMPONENTS: tuple[type[View], ...] = (
    Submitted,
    WorkflowPage,
    Workflow,
    TaskDetail,
    CancelAccepted,
    RetryAccepted,
    Health,
    HealthUnavailable,
    Graph,
    Problem,
    WorkersView,
    DoctorReport,
    PurgedView,
    PurgeReport,
)
"""The models the OpenAPI document names (with every model they use)."""
