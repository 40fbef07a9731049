"""dagq's error hierarchy: one base class, a docstring on every error.

User-facing errors say what was wrong, where (task, field) and, where it helps, what to do.
The HTTP layer maps each class to a status code; the CLI maps them to exit codes.
"""

from __future__ import annotations

from dataclasses import dataclass


class DagqError(Exception):
    """Base class of every error dagq raises on purpose."""


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


class DefinitionError(DagqError):
    """A workflow definition is invalid. Carries every issue found, not just the first."""

    def __init__(self, issues: list[Issue], source: str = "<input>") -> None:
        self.issues = list(issues)
        self.source = source
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        count = len(self.issues)
        super().__init__(f"{source}: {count} problem(s) in the workflow definition:\n{lines}")


class ConditionError(DagqError):
    """A task condition cannot be parsed or evaluated (the task is skipped with this reason)."""


class CodecError(DagqError):
    """A stored definition or state blob cannot be decoded (corrupt, or written by a newer dagq)."""


class MessageError(DagqError):
    """A queue message is malformed: not JSON, wrong shape, or too large. It is dead-lettered."""


class NotFoundError(DagqError):
    """A workflow (or a task of it) does not exist."""


class ConflictError(DagqError):
    """The request conflicts with the current state (same id but another definition; retry of a
    running workflow)."""


class StaleStateError(DagqError):
    """A state blob write lost the ETag compare-and-swap (HTTP 412): re-read and re-apply."""


class ConcurrencyError(DagqError):
    """An ETag compare-and-swap kept failing after the bounded number of re-reads."""


class LeaseError(DagqError):
    """The coordinator lease for a prefix is held by another coordinator, or was lost."""


class ConfigError(DagqError):
    """Settings are missing or contradictory (say, neither a connection string nor an account)."""


class InvalidContinuationError(DagqError, ValueError):
    """A listing's continuation token was not one dagq issued (tampered with, truncated, or from
    another listing): pass back the previous page's ``next`` unchanged."""
