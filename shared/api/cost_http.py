"""The cost endpoints: ``GET /api/workflows/{id}/cost`` and ``GET /api/cost?since_s=&by=``
(``shared.cost``; docs/cost.md)."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import Handler, guarded, json_response
from shared.names import check_workflow_id

if TYPE_CHECKING:
    from shared.cost.prices import PriceTable


@functools.lru_cache(maxsize=4)
def _prices(spec: str | None, vm_sku: str | None = None) -> PriceTable:
    """The price table of ``DAGQ_PRICES``, or the defaults for the pool's VM size
    (``DAGQ_GPU_VM_SKU``), read once per value."""
    from shared.cost.prices import load_prices

    return load_prices(spec, vm_sku)


def deployment_prices() -> PriceTable:
    """This deployment's price table (``DAGQ_PRICES``, else the defaults for its pool)."""
    return _prices(CONTEXT.settings.prices, CONTEXT.settings.gpu_vm_sku)


async def _workflow_cost(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.cost import get_workflow_cost

    workflow_id = req.route_params.get("id") or ""
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    prices = deployment_prices()
    return json_response(await get_workflow_cost(storage, workflow_id, prices, time.time()))


async def _period_cost(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api.query import CostQuery, parse_query
    from shared.ops.cost import period_cost

    query = parse_query(req, CostQuery)
    storage = await CONTEXT.storage()
    now = time.time()
    prices = deployment_prices()
    report = await period_cost(
        storage, since=now - query.since_s, by=query.by, prices=prices, now=now,
        limit=query.limit,
    )  # fmt: skip
    return json_response(report)


def _handler(operation: Handler) -> Handler:
    async def handle(req: func.HttpRequest) -> func.HttpResponse:
        return await guarded(req, operation)

    handle.__name__ = operation.__name__.lstrip("_")
    return handle


workflow_cost = _handler(_workflow_cost)
period_cost = _handler(_period_cost)
