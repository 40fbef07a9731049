"""The index projection of a workflow: what its row in the index table says, derived from its state.

Pure (no I/O, no clock): the coordinator projects after every flush and the API's submit creates the
first row with the same function, so the two can never disagree about what a row holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.definition.workflow import CompiledWorkflow
from shared.index_row import IndexRow

if TYPE_CHECKING:  # the runtime state module is the engine's; only its attributes are read here
    from shared.engine.state import RuntimeState


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
        writes=state.writes if state.incarnation_blobs else None,
    )
