"""The HTTP API's response shapes, defined once (pydantic): the contract of server and client.

The API builds every JSON answer from these models (``shared.api.service``), the client parses the
answers with them (``shared.client``), and the component schemas of ``shared/api/openapi.json`` are
generated from them (``python -m shared.api.openapi``); tests keep the three in step.

Conventions: a field without a default is always sent (it may be ``null`` when its type says so);
a field with a default is sent only when it applies (``tasks`` is left out with ``?tasks=false``,
``detail`` is sent by a cancel that had nothing to do). ``dump`` serializes an answer (JSON
mode, unset defaults left out). Unknown fields are kept: a client tolerates fields a newer server
adds.

Adding an endpoint: define its answer in the module of its kind (``workflows``, ``attempts``,
``health``, ``problems``, ``ops``, ``schedules``: a ``View`` subclass with a docstring and field
docs), build it in ``service``, list it in ``COMPONENTS`` and the path in
``shared.api.openapi``, and regenerate the document (see docs/api.md). This module imports
pydantic: the HTTP shell imports it on first use, never when ``function_app`` is imported.
"""

from __future__ import annotations

from shared.views.attempts import (
    AttemptList,
    AttemptView,
    GpuView,
)
from shared.views.base import (
    Epoch,
    View,
    dump,
)
from shared.views.cost import (
    CostGroup,
    CostReport,
    PoolMachines,
    TaskCost,
    WorkflowCost,
)
from shared.views.health import (
    CoordinatorHealth,
    Health,
    HealthUnavailable,
    PartitionHealth,
    QueueDepth,
)
from shared.views.ops import (
    DoctorFinding,
    DoctorReport,
    DoctorSummary,
    PurgedItem,
    PurgedView,
    PurgeReport,
    WorkersView,
    WorkerTaskView,
    WorkerView,
)
from shared.views.problems import (
    IssueView,
    Problem,
)
from shared.views.schedules import (
    ScheduleDeleted,
    ScheduleList,
    ScheduleRun,
    ScheduleView,
)
from shared.views.workflows import (
    Accepted,
    BlobOutput,
    CachedFromView,
    CancelAccepted,
    Graph,
    GraphTask,
    InlineOutput,
    LogLocation,
    NotifyView,
    RetryAccepted,
    Submitted,
    TaskDetail,
    TaskSummary,
    Workflow,
    WorkflowBase,
    WorkflowPage,
    WorkflowSummary,
)

__all__ = [
    "COMPONENTS",
    "Accepted",
    "AttemptList",
    "AttemptView",
    "BlobOutput",
    "CachedFromView",
    "CancelAccepted",
    "CoordinatorHealth",
    "CostGroup",
    "CostReport",
    "DoctorFinding",
    "DoctorReport",
    "DoctorSummary",
    "Epoch",
    "GpuView",
    "Graph",
    "GraphTask",
    "Health",
    "HealthUnavailable",
    "InlineOutput",
    "IssueView",
    "LogLocation",
    "NotifyView",
    "PartitionHealth",
    "PoolMachines",
    "Problem",
    "PurgeReport",
    "PurgedItem",
    "PurgedView",
    "QueueDepth",
    "RetryAccepted",
    "ScheduleDeleted",
    "ScheduleList",
    "ScheduleRun",
    "ScheduleView",
    "Submitted",
    "TaskCost",
    "TaskDetail",
    "TaskSummary",
    "View",
    "WorkerTaskView",
    "WorkerView",
    "WorkersView",
    "Workflow",
    "WorkflowBase",
    "WorkflowCost",
    "WorkflowPage",
    "WorkflowSummary",
    "dump",
]

COMPONENTS: tuple[type[View], ...] = (
    Submitted,
    WorkflowPage,
    Workflow,
    TaskDetail,
    AttemptList,
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
    WorkflowCost,
    CostReport,
    ScheduleView,
    ScheduleList,
    ScheduleDeleted,
)
"""The models the OpenAPI document names (with every model they use)."""
