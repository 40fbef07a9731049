"""One workflow's row in the index table (the listing's source), as the storage ports carry it.

It lives on the bottom floor because both sides need it: the engine derives a row from a state
(``shared.engine.projection.index_row``) and the storage ports read and write rows
(``shared.storage.ports.Index``), and the worker, which imports the ports, must not load the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.states import WorkflowStatus


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
    writes: int | None = None
    """The state's write count when projected: ``(run, writes)`` is the row's version, and a
    projection replaces only an older one (``Index.project``). None: unversioned (a state from
    before write counts), applied as it comes."""

    @property
    def version(self) -> tuple[int, int] | None:
        """``(run, writes)``, or None for an unversioned row."""
        return None if self.writes is None else (self.run, self.writes)

    def newer_than(self, stored: IndexRow | tuple[int, int] | None) -> bool:
        """Whether this projection may replace ``stored`` (a row, or its version): always when
        either is unversioned, else only when this one's version is greater."""
        theirs = stored.version if isinstance(stored, IndexRow) else stored
        return self.version is None or theirs is None or self.version > theirs
