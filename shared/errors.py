"""dagq's error hierarchy: one base class, a docstring on every error.

User-facing errors say what was wrong, where (task, field) and, where it helps, what to do.

An error the HTTP API answers with carries its HTTP status (``http_status``) and its problem type
(``problem_type``, the last segment of the RFC 7807 ``type`` URI, documented in docs/api.md):
``shared.api.problems.problem_for`` reads them, so the mapping to HTTP lives on the classes.
Errors without a status are internal: the API answers a generic 500 that hides their message.
The CLI maps errors to exit codes (``shared.cli.connect``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class DagqError(Exception):
    """Base class of every error dagq raises on purpose."""

    http_status: int | None = None
    """The HTTP status the API answers with; None: internal (a 500 that hides the message)."""
    problem_type: str = "internal-error"
    """The problem type slug of the API's answer."""
    problem_title: str | None = None
    """The problem ``title``; None: the status's reason phrase."""

    def problem_detail(self) -> str:
        """The problem ``detail``: what was wrong and what to do."""
        return str(self)

    def problem_members(self) -> dict[str, Any]:
        """Members of the problem document beyond type, title, status, detail and instance."""
        return {}


@dataclass(frozen=True)
class Issue:
    """One problem found in a workflow definition.

    ``location`` is a dotted/indexed path into the definition, such as ``tasks[3].depends_on`` or
    ``tasks.train.kwargs.cmd`` (the task name is used once it is known); ``task`` is the task's name
    when the problem belongs to one task.
    """

    location: str
    message: str
    task: str | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def to_dict(self) -> dict[str, str | None]:
        return {"location": self.location, "task": self.task, "message": self.message}


# -- the workflow definition and its evaluation --------------------------------------------------


class DefinitionError(DagqError):
    """A workflow definition is invalid. Carries every issue found, not just the first."""

    http_status = 400
    problem_type = "invalid-definition"
    problem_title = "Invalid workflow definition"

    def __init__(self, issues: list[Issue], source: str = "<input>") -> None:
        self.issues = list(issues)
        self.source = source
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        count = len(self.issues)
        super().__init__(f"{source}: {count} problem(s) in the workflow definition:\n{lines}")

    def problem_detail(self) -> str:
        return (
            f"the workflow definition has {len(self.issues)} problem(s); fix every entry of"
            " 'errors' and submit again"
        )

    def problem_members(self) -> dict[str, Any]:
        return {"errors": [issue.to_dict() for issue in self.issues]}


class TemplateSyntaxError(DagqError, ValueError):
    """A ``{{ ... }}`` placeholder that is not a single variable name, or one placed where the
    shell would not read its value as one plain word (the compiler reports it as a definition
    issue)."""


class ConditionError(DagqError):
    """A task condition cannot be parsed or evaluated (the task is skipped with this reason)."""


class ConditionBudgetError(ConditionError):
    """A condition needs more evaluation steps than
    ``shared.limits.MAX_CONDITION_STEPS``
    (found at submit when it can be known, else while evaluating): the task fails, it is not
    skipped."""


# -- stored data and messages --------------------------------------------------------------------


class CodecError(DagqError):
    """A stored definition or state blob cannot be decoded (corrupt, or written by a newer dagq)."""

    http_status = 500
    problem_type = "corrupt-data"

    def problem_detail(self) -> str:
        return f"stored workflow data cannot be read: {self}"


class MessageError(DagqError):
    """A queue message is malformed: not JSON, wrong shape, or too large. It is dead-lettered."""


class IllegalMoveError(DagqError):
    """The engine tried to move a task between states that ``shared.engine.task_moves.LEGAL_MOVES``
    does not connect: a defect in dagq, never the user's doing."""


class StaleStateError(DagqError):
    """A state blob write lost the ETag compare-and-swap (HTTP 412): re-read and re-apply."""


class ProjectionConflictError(DagqError):
    """An index row changed under every try of a versioned projection (its ``If-Match`` write
    refused each time): the projector keeps the row for its next flush."""


class LeaseError(DagqError):
    """The coordinator lease for a prefix is held by another coordinator, or was lost."""


# -- the coordinator's workflow update (internal: each ends in redelivery or a dead letter) ------


class ApplyError(DagqError):
    """Computing a workflow's new state raised unexpectedly (the engine or the state codec: a
    defect, or an event the bounds let through); the state may be half-mutated. ``envelope`` is
    the event being applied, when the failure is known to be its own (else None)."""

    def __init__(self, detail: str, envelope: Any) -> None:
        super().__init__(detail)
        self.envelope = envelope


class WrongPartitionError(DagqError):
    """An event reached the queue of a partition its workflow does not belong to (a workflow
    keeps the partition recorded at submit): refused, never applied there."""

    def __init__(self, workflow_id: str, owner: int, here: int) -> None:
        super().__init__(
            f"workflow {workflow_id} belongs to partition {owner}, not {here}: an event for it "
            "on this partition's queue is refused (its state and index row keep their partition)"
        )
        self.owner = owner


class DispatchError(DagqError):
    """A task message could not be sent (or the lease was no longer safe to send under)."""


class DispatchBoundError(DagqError):
    """Dispatching one workflow did not settle within its bound (``coordinator.apply.
    dispatch_rounds``): a defect, logged and counted, never a dropped dispatch."""


class FlushConflictsError(DagqError):
    """A state write lost the compare-and-swap too many times in a row."""


class ConfigError(DagqError):
    """Settings are missing or contradictory (say, neither a connection string nor an account)."""

    http_status = 503
    problem_type = "misconfigured"

    def problem_detail(self) -> str:
        return f"the app is misconfigured: {self}"


class GpuDetectionError(ConfigError):
    """``--gpus auto`` was given but nvidia-smi could not list the GPUs."""


# -- API requests --------------------------------------------------------------------------------


class RequestError(DagqError):
    """An HTTP request is unacceptable as sent (size, media type, encoding, a query parameter).

    The status and problem type vary per case, so they are given per instance.
    """

    def __init__(
        self, status: int, detail: str, *, problem_type: str, title: str | None = None
    ) -> None:
        super().__init__(detail)
        self.http_status = status  # per instance, unlike other errors
        self.problem_type = problem_type
        self.problem_title = title


class InvalidIdError(DagqError):
    """A workflow id or task name in a request is not even well-formed."""

    http_status = 400
    problem_type = "invalid-name"


class InvalidContinuationError(DagqError, ValueError):
    """A listing's continuation token was not one dagq issued (tampered with, truncated, or from
    another listing): pass back the previous page's ``next`` unchanged."""

    http_status = 400
    problem_type = "invalid-continuation"


class NotFoundError(DagqError):
    """A workflow (or a task of it) does not exist."""

    http_status = 404
    problem_type = "not-found"


class ConflictError(DagqError):
    """The request conflicts with the current state (same id but another definition; retry of a
    running workflow)."""

    http_status = 409
    problem_type = "conflict"


class IncompleteSubmitError(DagqError):
    """A submit wrote its definition but failed at a later step (storage hiccup, timeout).

    Submitting the same definition again with ``?id={workflow_id}`` completes it: every step
    tolerates what the failed attempt already wrote. The problem document carries the ``id``
    (the client may not know a generated one).
    """

    http_status = 503
    problem_type = "incomplete-submit"

    def __init__(self, workflow_id: str, cause: BaseException) -> None:
        self.workflow_id = workflow_id
        self.cause = cause
        super().__init__(
            f"workflow {workflow_id!r} was only partly created ({type(cause).__name__}): submit"
            f" the same definition again with ?id={workflow_id} to complete it"
        )

    def problem_members(self) -> dict[str, Any]:
        return {"id": self.workflow_id}


class SizeMismatchError(DagqError):
    """A blob a worker named does not hold the number of bytes its event claimed: it is not read
    (``shared.coordinator.blob_reads``)."""
