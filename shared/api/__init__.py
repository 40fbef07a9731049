"""dagq's HTTP API as plain code, and the Functions triggers' entry points.

``function_app.py`` only declares the functions and delegates here, so everything the app does can
be tested without the Functions host. The modules, by job:

- ``service``: the changes (submit, cancel, retry) and compiling a submitted definition;
- ``reads``: the reads (a workflow, a task, its attempts, log or output, the listing, health), as
  views of ``shared.views`` (``task_reads``: a task's attempts, live log and progress);
- ``http``, ``task_http``, ``ops_http``, ``dashboard``: the HTTP handlers the app declares (each
  checks the request with ``request`` first and answers errors as problem+json via ``problems``);
- ``triggers``: the queue and timer triggers' entry into the coordinator;
- ``context``: the process's settings and storage, opened on first use;
- ``openapi``: the OpenAPI document, generated from ``shared.views``.

The names below load on first use (``shared.lazy``): the app imports this package at start-up and
must not pay for pydantic, the Azure SDKs or the engine then (the cold-start rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.api.context import CONTEXT, AppContext
    from shared.api.openapi import OPENAPI_PATH
    from shared.api.problems import bad_request, problem_for
    from shared.api.reads import (
        get_attempts,
        get_log,
        get_task,
        get_workflow,
        health,
        list_workflows,
        read_task_output,
        workflow_view,
    )
    from shared.api.service import (
        ControlResult,
        Submission,
        cancel,
        compile_definition,
        retry,
        submit,
    )
    from shared.api.triggers import on_event, on_sweep

__all__ = [
    "CONTEXT",
    "OPENAPI_PATH",
    "AppContext",
    "ControlResult",
    "Submission",
    "bad_request",
    "cancel",
    "compile_definition",
    "get_attempts",
    "get_log",
    "get_task",
    "get_workflow",
    "health",
    "list_workflows",
    "on_event",
    "on_sweep",
    "problem_for",
    "read_task_output",
    "retry",
    "submit",
    "workflow_view",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.api.context": ("CONTEXT", "AppContext"),
        "shared.api.openapi": ("OPENAPI_PATH",),
        "shared.api.problems": ("bad_request", "problem_for"),
        "shared.api.reads": (
            "get_attempts",
            "get_log",
            "get_task",
            "get_workflow",
            "health",
            "list_workflows",
            "read_task_output",
            "workflow_view",
        ),
        "shared.api.service": (
            "ControlResult",
            "Submission",
            "cancel",
            "compile_definition",
            "retry",
            "submit",
        ),
        "shared.api.triggers": ("on_event", "on_sweep"),
    },
)
