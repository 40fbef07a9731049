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

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.coordinator.entry import Coordinator as Coordinator
    from shared.coordinator.envelope import Envelope as Envelope
    from shared.coordinator.options import CoordinatorOptions as CoordinatorOptions
    from shared.coordinator.passes import PassResult as PassResult
    from shared.coordinator.process import PartitionSet as PartitionSet
    from shared.coordinator.stats import LeaseState as LeaseState
    from shared.coordinator.stats import PassStats as PassStats
    from shared.coordinator.update import WorkflowUpdater as WorkflowUpdater

__all__, __getattr__ = lazy_face(__name__, __file__)
