"""HTTP handlers of the operations endpoints (workers, doctor, purge); ``shared.ops`` works.

Same conventions as ``shared.api.http``: parameters are checked before storage is touched, every
error is a problem+json body, and each handler is ``async (HttpRequest) -> HttpResponse``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import _handler, json_response
from shared.api.problems import bad_request
from shared.api.request import bool_param as _bool_param
from shared.api.request import route_param as _route
from shared.limits import MAX_PURGE_PAGE, MAX_TOKEN_CHARS
from shared.states import WorkflowStatus

PURGEABLE = ("completed", "failed", "cancelled")


async def _workers(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.workers import list_workers

    settings = CONTEXT.settings
    storage = await CONTEXT.storage()
    view = await list_workers(
        storage,
        now=time.time(),
        lost_after_s=settings.worker_lost_after_s,
        forget_after_s=settings.worker_forget_after_s,
    )
    return json_response(view)  # progress and gpus only where reported


async def _delete(req: func.HttpRequest) -> func.HttpResponse:
    from shared.names import check_workflow_id
    from shared.ops.purge import purge_workflow

    workflow_id = _route(req, "id")
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    view = await purge_workflow(storage, workflow_id)
    return json_response(view.model_dump(mode="json"))


def purge_params(req: func.HttpRequest) -> dict[str, Any]:
    """The query of ``POST /api/purge``, checked: ``older_than_s`` (required), ``status``
    (comma-separated terminal statuses), ``dry_run``, ``limit``, ``next``."""
    raw_age = req.params.get("older_than_s")
    try:
        older_than_s = float(raw_age) if raw_age else -1.0
    except ValueError:
        older_than_s = -1.0
    if not math.isfinite(older_than_s) or older_than_s < 0:
        raise bad_request(
            "query parameter 'older_than_s' is required: the age in seconds (>= 0) since a"
            " workflow finished beyond which it is purged, e.g. 2592000 for 30 days"
        )
    statuses = []
    for part in (req.params.get("status") or ",".join(PURGEABLE)).split(","):
        if part.strip().lower() not in PURGEABLE:
            raise bad_request(
                f"status {part[:40]!r} cannot be purged: use one or more of {', '.join(PURGEABLE)}"
            )
        statuses.append(WorkflowStatus(part.strip().lower()))
    raw_limit = req.params.get("limit") or "100"
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MAX_PURGE_PAGE:
        raise bad_request(f"limit must be an integer from 1 to {MAX_PURGE_PAGE}")
    token = req.params.get("next") or None
    if token is not None and (
        len(token) > MAX_TOKEN_CHARS or not token.isascii() or not token.isprintable()
    ):
        raise bad_request("invalid continuation token: pass back the 'next' value of a purge")
    return {
        "older_than_s": older_than_s,
        "statuses": statuses,
        "dry_run": _bool_param(req, "dry_run", False),
        "limit": int(raw_limit),
        "continuation": token,
    }


async def _purge(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.purge import purge_many

    params = purge_params(req)
    storage = await CONTEXT.storage()
    report = await purge_many(storage, now=time.time(), **params)
    return json_response(report.model_dump(mode="json"))


async def _doctor(req: func.HttpRequest) -> func.HttpResponse:
    from shared.names import check_workflow_id
    from shared.ops.doctor import doctor

    workflow_id = req.params.get("id") or None
    if workflow_id is not None:
        check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    report = await doctor(storage, CONTEXT.settings, now=time.time(), workflow_id=workflow_id)
    return json_response(report.model_dump(mode="json"))


list_workers = _handler(_workers)
run_doctor = _handler(_doctor)
delete_workflow = _handler(_delete)
purge_workflows = _handler(_purge)
