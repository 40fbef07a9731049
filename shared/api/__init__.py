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

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.api.context import CONTEXT as CONTEXT
    from shared.api.context import AppContext as AppContext
    from shared.api.openapi import OPENAPI_PATH as OPENAPI_PATH
    from shared.api.problems import bad_request as bad_request
    from shared.api.problems import problem_for as problem_for
    from shared.api.reads import (
        get_attempts as get_attempts,
    )
    from shared.api.reads import (
        get_log as get_log,
    )
    from shared.api.reads import (
        get_task as get_task,
    )
    from shared.api.reads import (
        get_workflow as get_workflow,
    )
    from shared.api.reads import (
        health as health,
    )
    from shared.api.reads import (
        list_workflows as list_workflows,
    )
    from shared.api.reads import (
        read_task_output as read_task_output,
    )
    from shared.api.reads import (
        workflow_view as workflow_view,
    )
    from shared.api.service import (
        ControlResult as ControlResult,
    )
    from shared.api.service import (
        Submission as Submission,
    )
    from shared.api.service import (
        cancel as cancel,
    )
    from shared.api.service import (
        compile_definition as compile_definition,
    )
    from shared.api.service import (
        retry as retry,
    )
    from shared.api.service import (
        submit as submit,
    )
    from shared.api.triggers import on_event as on_event
    from shared.api.triggers import on_sweep as on_sweep

__all__, __getattr__ = lazy_face(__name__, __file__)
