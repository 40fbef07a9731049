"""What a run cost: GPU-hours, CPU-hours, an estimate in money from a price table per queue, the
storage requests it caused, and what the result cache saved.

``prices.py`` reads the price table (``DAGQ_PRICES``); ``model.py`` computes a workflow's cost
from its definition and state (pure: no storage, no clock); ``requests.py`` estimates the storage
requests of a run from its attempts, with figures measured by ``bench/bench_concurrent.py``.
Reading states for it is ``shared.ops.cost``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.cost.model import task_cost as task_cost
    from shared.cost.model import workflow_cost as workflow_cost
    from shared.cost.prices import (
        DEFAULT_PRICES as DEFAULT_PRICES,
    )
    from shared.cost.prices import (
        PriceTable as PriceTable,
    )
    from shared.cost.prices import (
        QueuePrice as QueuePrice,
    )
    from shared.cost.prices import (
        load_prices as load_prices,
    )
    from shared.cost.requests import estimate_requests as estimate_requests

__all__, __getattr__ = lazy_face(__name__, __file__)
