"""The coordinator: the imperative shell that drives the engine from the event queue.

``Coordinator.run_once`` / ``run_sweeps`` / ``handle_trigger_message`` are what the Functions
triggers call; ``python -m shared.coordinator`` runs ``Coordinator.run_forever`` as a process.
"""

from shared.coordinator.entry import Coordinator
from shared.coordinator.envelope import Envelope
from shared.coordinator.options import CoordinatorOptions
from shared.coordinator.passes import PassResult
from shared.coordinator.stats import LeaseState, PassStats

__all__ = [
    "Coordinator",
    "CoordinatorOptions",
    "Envelope",
    "LeaseState",
    "PassResult",
    "PassStats",
]
