"""What the engine asks the shell to do: commands as data.

``shared.engine`` returns these from each transition; the coordinator carries them out (send a task
message, update the index) and nothing else decides what to dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.messages import OutputRef
from shared.states import WorkflowStatus


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Send attempt ``attempt`` of task number ``task`` to queue ``queue``, not before
    ``now + delay_s`` (a retry backoff: the shell sends it with that initial invisibility)."""

    task: int
    name: str
    attempt: int
    queue: str
    delay_s: float = 0.0
    upstream: dict[str, OutputRef] | None = None
    """Outputs of the task's parents that produced one (parent name -> ref)."""
    incarnation: int | None = None
    """The workflow's incarnation (its state's), which the task message carries."""
    run: int | None = None
    """The workflow's run when this attempt was sent, which the task message carries."""
    incarnation_blobs: bool = False
    """The attempt's blobs are named under the incarnation (the state's ``incarnation_blobs``)."""
    upstream_digest: str | None = None
    """``shared.messages.upstream_digest(upstream)`` for a task with parents (the state
    records it: a report of this attempt that ran on other inputs is not taken as its)."""

    @property
    def blob_incarnation(self) -> int | None:
        """The incarnation that names the attempt's blobs (None: the flat layout)."""
        return self.incarnation if self.incarnation_blobs else None


@dataclass(frozen=True, slots=True)
class OtherInputs:
    """A report of ``attempt`` of task ``task`` was not taken: it ran on other inputs than the
    state recorded for that attempt (a re-sent dispatch carried others); counted by the pass."""

    task: int
    attempt: int


@dataclass(frozen=True, slots=True)
class WorkflowFinished:
    """The workflow reached a terminal status with this transition."""

    status: WorkflowStatus


Command = Dispatch | WorkflowFinished | OtherInputs
