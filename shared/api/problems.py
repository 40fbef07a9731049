"""RFC 7807 problem details: the one error shape every API response uses.

An ``ApiProblem`` carries the HTTP status with a message that says what was wrong, where, and what
to do. ``problem_for`` maps dagq's own errors to statuses; anything unexpected becomes a generic 500
whose body never contains a stack trace (the trace goes to the log).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from shared.errors import (
    CodecError,
    ConfigError,
    ConflictError,
    DagqError,
    DefinitionError,
    InvalidContinuationError,
    NotFoundError,
)

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://dagq.dev/problems/"
"""Problem ``type`` URIs are ``{base}{slug}``; they identify the kind of problem (documented in
docs/api.md), they are not fetched."""


class ApiProblem(DagqError):
    """An error with an HTTP status, rendered as ``application/problem+json``."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        slug: str | None = None,
        title: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.slug = slug or self.title.lower().replace(" ", "-")
        self.errors = errors
        self.extra = extra or {}

    def to_dict(self, instance: str | None = None) -> dict[str, Any]:
        """The problem+json body."""
        body: dict[str, Any] = {
            "type": PROBLEM_TYPE_BASE + self.slug,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance:
            body["instance"] = instance
        if self.errors is not None:
            body["errors"] = self.errors
        body.update(self.extra)
        return body


def bad_request(detail: str, *, slug: str = "bad-request") -> ApiProblem:
    return ApiProblem(400, detail, slug=slug)


def not_found(detail: str) -> ApiProblem:
    return ApiProblem(404, detail, slug="not-found")


def conflict(detail: str, **extra: Any) -> ApiProblem:
    return ApiProblem(409, detail, slug="conflict", extra=extra)


def problem_for(exc: BaseException) -> ApiProblem:
    """The problem to answer for ``exc`` (dagq errors keep their message; others are hidden)."""
    if isinstance(exc, ApiProblem):
        return exc
    if isinstance(exc, DefinitionError):
        count = len(exc.issues)
        return ApiProblem(
            400,
            f"the workflow definition has {count} problem(s); fix every entry of 'errors'"
            " and submit again",
            slug="invalid-definition",
            title="Invalid workflow definition",
            errors=[issue.to_dict() for issue in exc.issues],
        )
    if isinstance(exc, InvalidContinuationError):
        return bad_request(str(exc), slug="invalid-continuation")
    if isinstance(exc, NotFoundError):
        return not_found(str(exc))
    if isinstance(exc, ConflictError):
        return conflict(str(exc))
    if isinstance(exc, ConfigError):
        return ApiProblem(503, f"the app is misconfigured: {exc}", slug="misconfigured")
    if isinstance(exc, CodecError):
        return ApiProblem(500, f"stored workflow data cannot be read: {exc}", slug="corrupt-data")
    return ApiProblem(
        500,
        "an unexpected error occurred; it was logged with the request id. Retry later, and report"
        " it if it persists",
        slug="internal-error",
    )
