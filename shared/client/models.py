"""What the client's methods return: the API's response views, as ``shared.views`` defines
them for the server too, plus what only the client knows (whether a submit created the workflow)."""

from __future__ import annotations

from shared import views
from shared.views import (
    Accepted,
    CancelAccepted,
    RetryAccepted,
    TaskDetail,
    Workflow,
    WorkflowPage,
    WorkflowSummary,
)

TaskInfo = views.TaskSummary
"""One task of a workflow, as listed by ``get`` (the client's name for ``TaskSummary``)."""


class Submitted(views.Submitted):
    """What submit returns."""

    created: bool = True
    """False when an idempotent submit (same id, same definition) found the workflow existing
    (the API answered 200 rather than 201)."""


__all__ = [
    "Accepted",
    "CancelAccepted",
    "RetryAccepted",
    "Submitted",
    "TaskDetail",
    "TaskInfo",
    "Workflow",
    "WorkflowPage",
    "WorkflowSummary",
]
