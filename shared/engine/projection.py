"""The index projection of a workflow: what its row in the index table says, derived from its state.

Pure (no I/O, no clock): the coordinator projects after every flush and the API's submit creates the
first row with the same function, so the two can never disagree about what a row holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shared.definition.workflow import CompiledWorkflow
from shared.states import WorkflowStatus

if TYPE_CHECKING:  # the runtime state module is the engine's; only its attributes are read here
    from shared.engine.state import RuntimeState


@dataclass
class IndexRow:
    """One workflow's row in the index table: a derived summary, never the source of truth."""

    workflow_id: str
    name: str
    status: WorkflowStatus
    created_at: float
    updated_at: float
    partition: int = 0
    """The partition the workflow was given at submit (``shared.deployment``)."""
    total: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    """Task state -> number of tasks in it."""
    queues: list[str] = field(default_factory=list)
    run: int = 1
    """The current run: 1 at submit, +1 for each rerun from failure."""
    cancel_requested: bool = False
    """The durable cancel flag. Written only by the API's cancel; projections never clear it."""
    error: str | None = None
    finished_at: float | None = None


def index_row(
    wf: CompiledWorkflow, state: RuntimeState, queues: list[str] | tuple[str, ...] | None = None
) -> IndexRow:
    """The index row of ``state`` (a workflow compiled as ``wf``).

    ``queues`` are the definition queue names the workflow uses (default: every queue of ``wf``).
    ``cancel_requested`` mirrors the state, but ``Index.project`` never writes that field: the
    durable flag belongs to the API's cancel alone.
    """
    return IndexRow(
        workflow_id=state.workflow_id,
        name=wf.name,
        status=state.status,
        created_at=state.created_at,
        updated_at=state.updated_at,
        total=len(state),  # expansions included
        counts={key: value for key, value in state.counts().items() if value},
        queues=list(wf.queues if queues is None else queues),
        run=state.run,
        cancel_requested=state.cancel_requested,
        error=state.error,
        finished_at=state.finished_at,
    )
