"""The HTTP shell of the API: parse a Functions ``HttpRequest``, call ``service``, answer JSON.

Every handler has the signature ``async (HttpRequest) -> HttpResponse`` so ``function_app.py`` can
delegate in one line. Request validation (size, media type, encoding, ids, query parameters) happens
here, BEFORE storage is touched: a rejected request writes nothing. Every error is an RFC 7807
problem+json body; unexpected exceptions are logged with a reference and answered with a generic 500
that never contains a stack trace.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.notify_query import notify_params
from shared.api.param_query import param_values
from shared.api.problems import PROBLEM_CONTENT_TYPE, Problem, problem_for
from shared.api.request import (
    cache_params,
    list_params,
    parse_definition_body,
    route_param,
    submit_id,
)
from shared.errors import DagqError
from shared.limits import MAX_CANCEL_REASON_CHARS
from shared.names import check_task_name, check_workflow_id
from shared.signing import signer_of

log = logging.getLogger("dagq.api")

OPENAPI_PATH = Path(__file__).with_name("openapi.json")

Handler = Callable[[func.HttpRequest], Awaitable[func.HttpResponse]]


# -- responses -----------------------------------------------------------------------------------


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> func.HttpResponse:
    """A JSON answer; ``body`` is a response view (``shared.views``) or JSON-ready data."""
    from shared.views import View, dump

    if isinstance(body, View):
        body = dump(body)
    return func.HttpResponse(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        headers=headers,
        mimetype="application/json",
        charset="utf-8",
    )


def problem_response(problem: Problem, instance: str | None = None) -> func.HttpResponse:
    """The problem+json answer."""
    return func.HttpResponse(
        json.dumps(problem.to_dict(instance)),
        status_code=problem.status,
        mimetype=PROBLEM_CONTENT_TYPE,
        charset="utf-8",
    )


async def guarded(req: func.HttpRequest, operation: Handler) -> func.HttpResponse:
    """Run ``operation``; turn every exception into a problem response (never a stack trace)."""
    instance = urlsplit(req.url).path or None
    try:
        return await operation(req)
    except Exception as exc:
        problem = problem_for(exc)
        if problem.status >= 500:
            ref = uuid.uuid4().hex[:12]
            log.exception("%s %s failed (ref %s)", req.method, instance, ref)
            problem.members["ref"] = ref
        return problem_response(problem, instance)


def _base_url(req: func.HttpRequest) -> str:
    """``scheme://host/{routePrefix}`` of this request, to build resource URLs."""
    parts = urlsplit(req.url)
    path = parts.path
    cut = path.find("/workflows")
    if cut >= 0:
        path = path[:cut]
    return f"{parts.scheme}://{parts.netloc}{path.rstrip('/')}"


def workflow_url(req: func.HttpRequest, workflow_id: str) -> str:
    return f"{_base_url(req)}/workflows/{workflow_id}"


# -- handlers ------------------------------------------------------------------------------------


async def _submit(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import service
    from shared.views import Submitted

    settings = CONTEXT.settings
    text, fmt = parse_definition_body(req, settings.max_definition_bytes)
    workflow_id = submit_id(req)
    overrides = cache_params(req)
    overrides["notify"] = notify_params(req)
    overrides["params"] = param_values(req)  # ?param=NAME=VALUE (shared.api.param_query)
    # Compiling and encoding a large definition takes a while: keep the event loop (and the
    # coordinator trigger sharing it) responsive.
    wf, encoded = await asyncio.to_thread(
        service.compile_definition, text, fmt,
        max_expansion_width=settings.max_expansion_width, **overrides,
    )  # fmt: skip
    storage = await CONTEXT.storage()
    result = await service.submit(
        storage, wf, now=time.time(), workflow_id=workflow_id, encoded=encoded,
        partitions=settings.partitions, signer=signer_of(settings.signing_key),
        names=settings.names,
    )  # fmt: skip
    url = workflow_url(req, result.workflow_id)
    body = Submitted(id=result.workflow_id, status=result.status, url=url)
    return json_response(body, 201 if result.created else 200, headers={"Location": url})


async def _list(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads

    params = list_params(req)
    storage = await CONTEXT.storage()
    page = await reads.list_workflows(
        storage, url_for=lambda workflow_id: workflow_url(req, workflow_id), **params
    )
    return json_response(page)


async def _get(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads

    workflow_id = route_param(req, "id")
    check_workflow_id(workflow_id)
    from shared.api.query import GetQuery, parse_query

    tasks = parse_query(req, GetQuery).tasks
    storage = await CONTEXT.storage()
    return json_response(await reads.get_workflow(storage, workflow_id, tasks=tasks))


async def _get_task(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads

    workflow_id, task = route_param(req, "id"), route_param(req, "task")
    check_workflow_id(workflow_id)
    check_task_name(task)
    storage = await CONTEXT.storage()
    body = await reads.get_task(
        storage, workflow_id, task, outputs_container=CONTEXT.settings.names.outputs_container
    )
    return json_response(body)


async def _get_task_output(req: func.HttpRequest) -> func.HttpResponse:
    """A task's latest output, as stored (inline in the state, or its blob)."""
    from shared.api import reads

    workflow_id, task = route_param(req, "id"), route_param(req, "task")
    check_workflow_id(workflow_id)
    check_task_name(task)
    storage = await CONTEXT.storage()
    data = await reads.read_task_output(storage, workflow_id, task)
    return func.HttpResponse(data, status_code=200, mimetype="application/json", charset="utf-8")


async def _cancel(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import service
    from shared.views import CancelAccepted

    workflow_id = route_param(req, "id")
    check_workflow_id(workflow_id)
    reason = req.params.get("reason") or None
    if reason is not None:
        reason = "".join(c for c in reason if c.isprintable())[:MAX_CANCEL_REASON_CHARS]
    storage = await CONTEXT.storage()
    signer = signer_of(CONTEXT.settings.signing_key)
    result = await service.cancel(storage, workflow_id, reason=reason, signer=signer)
    # ``detail`` is sent only when there was nothing to cancel.
    detail = (
        {}
        if result.sent
        else {"detail": f"the workflow already finished ({result.status}); nothing to cancel"}
    )
    body = CancelAccepted(
        id=workflow_id,
        status=result.status,
        cancel_requested=result.sent,
        url=workflow_url(req, workflow_id),
        **detail,
    )
    return json_response(body, 202)


async def _retry(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import service
    from shared.views import RetryAccepted

    workflow_id = route_param(req, "id")
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    result = await service.retry(
        storage, workflow_id, signer=signer_of(CONTEXT.settings.signing_key)
    )
    body = RetryAccepted(
        id=workflow_id, status=result.status, run=result.run + 1, url=workflow_url(req, workflow_id)
    )
    return json_response(body, 202)


async def _health(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads
    from shared.views import HealthUnavailable

    try:
        storage = await CONTEXT.storage()
        body = await reads.health(storage, CONTEXT.settings.partitions)
    except Exception as exc:  # unreachable storage is the answer, not an error of this request
        log.warning("health check failed: %s", exc)
        detail = str(exc) if isinstance(exc, DagqError) else type(exc).__name__
        unavailable = HealthUnavailable(status="unavailable", storage="unreachable", error=detail)
        return json_response(unavailable, 503)
    return json_response(body)


async def _openapi(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(
        OPENAPI_PATH.read_bytes(), status_code=200, mimetype="application/json", charset="utf-8"
    )


def _handler(operation: Handler) -> Handler:
    async def handle(req: func.HttpRequest) -> func.HttpResponse:
        return await guarded(req, operation)

    handle.__name__ = operation.__name__.lstrip("_")
    handle.__doc__ = operation.__doc__
    return handle


submit_workflow = _handler(_submit)
list_workflows = _handler(_list)
get_workflow = _handler(_get)
get_task = _handler(_get_task)
get_task_output = _handler(_get_task_output)
cancel_workflow = _handler(_cancel)
retry_workflow = _handler(_retry)
health = _handler(_health)
openapi = _handler(_openapi)
