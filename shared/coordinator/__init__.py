"""The coordinator: the imperative shell that drives the engine from the event queue.

``Coordinator.run_once`` / ``run_sweeps`` / ``handle_trigger_message`` are what the Functions
triggers call; ``python -m shared.coordinator`` runs ``Coordinator.run_forever`` as a process
(``PartitionSet``: the partitions it serves). ``WorkflowUpdater`` is the workflow update (load,
apply the events with the engine, dispatch, write under If-Match); docs/coordinator.md has the rest.

The names below load on first use (``shared.lazy``), so that importing one module of the package
(``options``, ``stats``) does not import the engine and every other module with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.coordinator.entry import Coordinator
    from shared.coordinator.envelope import Envelope
    from shared.coordinator.options import CoordinatorOptions
    from shared.coordinator.passes import PassResult
    from shared.coordinator.process import PartitionSet
    from shared.coordinator.stats import LeaseState, PassStats
    from shared.coordinator.update import WorkflowUpdater

__all__ = [
    "Coordinator",
    "CoordinatorOptions",
    "Envelope",
    "LeaseState",
    "PartitionSet",
    "PassResult",
    "PassStats",
    "WorkflowUpdater",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.coordinator.entry": ("Coordinator",),
        "shared.coordinator.envelope": ("Envelope",),
        "shared.coordinator.options": ("CoordinatorOptions",),
        "shared.coordinator.passes": ("PassResult",),
        "shared.coordinator.process": ("PartitionSet",),
        "shared.coordinator.stats": ("LeaseState", "PassStats"),
        "shared.coordinator.update": ("WorkflowUpdater",),
    },
)
