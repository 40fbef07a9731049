"""The cost endpoints: ``GET /api/workflows/{id}/cost`` and ``GET /api/cost?since_s=&by=``
(``shared.cost``; docs/cost.md)."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Literal

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import Handler, guarded, json_response
from shared.api.problems import bad_request
from shared.limits import MAX_COST_WORKFLOWS
from shared.names import check_workflow_id

if TYPE_CHECKING:
    from shared.cost.prices import PriceTable

MAX_SINCE_S = 366 * 86400.0
"""Longest period a cost report covers."""


@functools.lru_cache(maxsize=4)
def _prices(spec: str | None, vm_sku: str | None = None) -> PriceTable:
    """The price table of ``DAGQ_PRICES``, or the defaults for the pool's VM size
    (``DAGQ_GPU_VM_SKU``), read once per value."""
    from shared.cost.prices import load_prices

    return load_prices(spec, vm_sku)


async def _workflow_cost(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.cost import get_workflow_cost

    workflow_id = req.route_params.get("id") or ""
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    prices = _prices(CONTEXT.settings.prices, CONTEXT.settings.gpu_vm_sku)
    return json_response(await get_workflow_cost(storage, workflow_id, prices, time.time()))


async def _period_cost(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.cost import period_cost

    raw = req.params.get("since_s") or str(7 * 86400)
    try:
        since_s = float(raw)
    except ValueError:
        since_s = -1.0
    if not 0 < since_s <= MAX_SINCE_S:
        raise bad_request(f"since_s must be seconds from 1 to {MAX_SINCE_S:.0f}, not {raw[:40]!r}")
    raw_by = req.params.get("by") or "queue"
    if raw_by not in ("queue", "name"):
        raise bad_request(f"by must be queue or name, not {raw_by[:40]!r}")
    by: Literal["queue", "name"] = "name" if raw_by == "name" else "queue"
    limit_raw = req.params.get("limit") or str(MAX_COST_WORKFLOWS)
    if not limit_raw.isdigit() or not 1 <= int(limit_raw) <= MAX_COST_WORKFLOWS:
        raise bad_request(f"limit must be an integer from 1 to {MAX_COST_WORKFLOWS}")
    storage = await CONTEXT.storage()
    now = time.time()
    prices = _prices(CONTEXT.settings.prices, CONTEXT.settings.gpu_vm_sku)
    report = await period_cost(
        storage, since=now - since_s, by=by, prices=prices, now=now, limit=int(limit_raw),
    )  # fmt: skip
    return json_response(report)


def _handler(operation: Handler) -> Handler:
    async def handle(req: func.HttpRequest) -> func.HttpResponse:
        return await guarded(req, operation)

    handle.__name__ = operation.__name__.lstrip("_")
    return handle


workflow_cost = _handler(_workflow_cost)
period_cost = _handler(_period_cost)
