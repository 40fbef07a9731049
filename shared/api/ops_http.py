"""HTTP handlers of the operations endpoints (workers, doctor, purge); ``shared.ops`` works.

Same conventions as ``shared.api.http``: parameters are checked before storage is touched, every
error is a problem+json body, and each handler is ``async (HttpRequest) -> HttpResponse``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import _handler, json_response
from shared.api.request import route_param as _route
from shared.errors import ConfigError

if TYPE_CHECKING:
    from shared.cost.prices import PriceTable

POOL_WINDOW_S = 24 * 3600.0
"""The workers' answer reports the machines up in the last this long (``pool``)."""


async def _workers(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.workers import list_workers

    settings = CONTEXT.settings
    storage = await CONTEXT.storage()
    from shared.api.cost_http import deployment_prices
    from shared.ops.cost import pool_machines

    now = time.time()
    view = await list_workers(
        storage,
        now=now,
        lost_after_s=settings.worker_lost_after_s,
        forget_after_s=settings.worker_forget_after_s,
    )
    since = now - POOL_WINDOW_S
    try:
        prices: PriceTable | None = deployment_prices()
    except ConfigError:  # the cost endpoints say what is wrong; the workers are shown regardless
        prices = None
    pool = pool_machines(await storage.registry.machines(since, now), since, now, prices)
    currency = "USD" if prices is None else prices.currency
    update = {"pool": pool, "pool_window_s": POOL_WINDOW_S, "currency": currency}
    return json_response(view.model_copy(update=update))  # progress, gpus only where reported


async def _delete(req: func.HttpRequest) -> func.HttpResponse:
    from shared.names import check_workflow_id
    from shared.ops.purge import purge_workflow

    workflow_id = _route(req, "id")
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    view = await purge_workflow(storage, workflow_id)
    return json_response(view.model_dump(mode="json"))


def purge_params(req: func.HttpRequest) -> dict[str, Any]:
    """The query of ``POST /api/purge``, checked (``PurgeQuery``)."""
    from shared.api.query import PurgeQuery, parse_query

    query = parse_query(req, PurgeQuery)
    return {
        "older_than_s": query.older_than_s,
        "statuses": query.status,
        "dry_run": query.dry_run,
        "limit": query.limit,
        "continuation": query.next,
    }


async def _purge(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.purge import purge_many

    params = purge_params(req)
    storage = await CONTEXT.storage()
    report = await purge_many(storage, now=time.time(), **params)
    return json_response(report.model_dump(mode="json"))


async def _doctor(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api.query import DoctorQuery, parse_query
    from shared.names import check_workflow_id
    from shared.ops.doctor import doctor

    workflow_id = parse_query(req, DoctorQuery).id
    if workflow_id is not None:
        check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    report = await doctor(storage, CONTEXT.settings, now=time.time(), workflow_id=workflow_id)
    return json_response(report.model_dump(mode="json"))


list_workers = _handler(_workers)
run_doctor = _handler(_doctor)
delete_workflow = _handler(_delete)
purge_workflows = _handler(_purge)
