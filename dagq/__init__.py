"""dagq in Python: the HTTP client, its answers and errors, and workflows built in Python.

    import dagq

    wf = dagq.Workflow("hello", default_queue="cpu")
    prep = wf.task("prep", cmd="echo prep")
    wf.task("train", cmd="echo train {{ lr }}", after=[prep], foreach={"lr": [0.1, 1.0]})
    wf.validate()                                  # the API's compiler, located errors
    with dagq.Client() as client:                  # DAGQ_API_URL / DAGQ_API_KEY / config file
        run = dagq.Run.submit(client, wf)          # or client.submit(wf): a Submitted
        print(run.wait().status, run.outputs())

Importing ``dagq`` loads neither azure-functions nor the Azure Storage SDKs: ``pip install
'dagq[cli]'`` is enough. See docs/python.md.
"""

from __future__ import annotations

from dagq.builder import Task, Workflow
from dagq.run import Run
from shared.client import (
    Accepted,
    ApiError,
    ApiUnreachableError,
    CancelAccepted,
    Client,
    RetryAccepted,
    Submitted,
    TaskDetail,
    TaskInfo,
    WaitTimeoutError,
    WorkflowPage,
    WorkflowSummary,
)
from shared.client import Workflow as WorkflowState
from shared.definition import CompiledWorkflow, compile_text
from shared.errors import DagqError, DefinitionError, Issue

__all__ = [
    "Accepted",
    "ApiError",
    "ApiUnreachableError",
    "CancelAccepted",
    "Client",
    "CompiledWorkflow",
    "DagqError",
    "DefinitionError",
    "Issue",
    "RetryAccepted",
    "Run",
    "Submitted",
    "Task",
    "TaskDetail",
    "TaskInfo",
    "WaitTimeoutError",
    "Workflow",
    "WorkflowPage",
    "WorkflowState",
    "WorkflowSummary",
    "compile_text",
]
