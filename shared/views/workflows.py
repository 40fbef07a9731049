"""Answers about workflows: submit, list, get, a task, the graph, cancel and retry."""

from __future__ import annotations

from pydantic import Field, JsonValue

from shared.states import TERMINAL_TASK_STATES, TaskState, WorkflowStatus
from shared.views.base import Epoch, View


class Submitted(View):
    """``POST /workflows``: the workflow that was created (201) or found (200)."""

    id: str
    status: WorkflowStatus
    url: str
    """The workflow's URL (also the ``Location`` header)."""


class CachedFromView(View):
    """The attempt whose result a task reused from the result cache (it did not run)."""

    workflow_id: str
    task: str
    attempt: int
    run_s: float
    """How long that attempt ran: the run time the hit saved."""


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
    progress: float | None = None
    """How far the running attempt says it is (0-1), from its ``$DAGQ_PROGRESS`` lines; sent
    only while the task runs and has reported some."""
    metrics: dict[str, float] | None = None
    """The running attempt's latest metrics (plain names -> numbers, at most 8); sent only
    while the task runs and has reported some."""
    cached_from: CachedFromView | None = None
    """Set when the current attempt completed from the result cache (``cache:`` tasks)."""


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


class NotifyView(View):
    """A webhook the run tells when it ends (issue 29, docs/notifications.md): its host only,
    since a webhook's URL is often its credential (Slack, Teams), and never its secret."""

    host: str
    events: list[str]
    format: str
    signed: bool
    """It has a ``secret``: each request carries ``X-Dagq-Signature``."""


class Workflow(WorkflowBase):
    """``GET /workflows/{id}``: the workflow as its state blob says (authoritative)."""

    notify: list[NotifyView] = Field(default_factory=list)
    """The webhooks told when the run ends (``notify:``, ``--notify``)."""

    tasks: dict[str, TaskSummary] = Field(default_factory=dict)
    """Task name -> task; left out with ``?tasks=false``."""
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """The run's workflow parameters (``params:``): the defaults and the values given at submit."""


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
