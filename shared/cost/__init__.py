"""What a run cost: GPU-hours, CPU-hours, an estimate in money from a price table per queue, the
storage requests it caused, and what the result cache saved.

``prices.py`` reads the price table (``DAGQ_PRICES``); ``model.py`` computes a workflow's cost
from its definition and state (pure: no storage, no clock); ``requests.py`` estimates the storage
requests of a run from its attempts, with figures measured by ``bench/bench_concurrent.py``.
Reading states for it is ``shared.ops.cost``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.cost.model import task_cost, workflow_cost
    from shared.cost.prices import DEFAULT_PRICES, PriceTable, QueuePrice, load_prices
    from shared.cost.requests import estimate_requests

__all__ = [
    "DEFAULT_PRICES",
    "PriceTable",
    "QueuePrice",
    "estimate_requests",
    "load_prices",
    "task_cost",
    "workflow_cost",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.cost.model": ("task_cost", "workflow_cost"),
        "shared.cost.prices": ("DEFAULT_PRICES", "PriceTable", "QueuePrice", "load_prices"),
        "shared.cost.requests": ("estimate_requests",),
    },
)
