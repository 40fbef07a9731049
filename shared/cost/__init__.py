"""What a run cost: GPU-hours, CPU-hours, an estimate in money from a price table per queue, the
storage requests it caused, and what the result cache saved.

``prices.py`` reads the price table (``DAGQ_PRICES``); ``model.py`` computes a workflow's cost
from its definition and state (pure: no storage, no clock); ``requests.py`` estimates the storage
requests of a run from its attempts, with figures measured by ``bench/bench_concurrent.py``.
Reading states for it is ``shared.ops.cost``'s.
"""
