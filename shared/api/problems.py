"""RFC 7807 problem details: the one error shape every API response uses.

The mapping from errors to problems is one function, ``problem_for``, and it reads what each error
class says about itself (``http_status``, ``problem_type``, ``problem_detail()`` ...; see
``shared.errors``). Anything without a status — a bug, a storage surprise — becomes a generic 500
whose body never contains its message or a stack trace (the trace goes to the log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from shared.errors import DagqError, RequestError

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://dagq.dev/problems/"
"""Problem ``type`` URIs are ``{base}{slug}``; they identify the kind of problem (documented in
docs/api.md), they are not fetched."""

INTERNAL_DETAIL = (
    "an unexpected error occurred; it was logged with the request id. Retry later, and report"
    " it if it persists"
)


@dataclass
class Problem:
    """One problem+json answer (the body's shape is ``shared.views.ProblemView``)."""

    status: int
    slug: str
    title: str
    detail: str
    members: dict[str, Any] = field(default_factory=dict)
    """Further members: ``errors`` of an invalid definition, ``id``, the ``ref`` of a 500."""

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
        body.update(self.members)
        return body


def problem_for(exc: BaseException) -> Problem:
    """The problem to answer for ``exc`` (errors with a status keep their message; others are
    hidden behind a generic 500)."""
    if isinstance(exc, DagqError) and exc.http_status is not None:
        status = exc.http_status
        return Problem(
            status=status,
            slug=exc.problem_type,
            title=exc.problem_title or HTTPStatus(status).phrase,
            detail=exc.problem_detail(),
            members=exc.problem_members(),
        )
    return Problem(500, "internal-error", HTTPStatus(500).phrase, INTERNAL_DETAIL)


def bad_request(detail: str, *, problem_type: str = "bad-request") -> RequestError:
    """A 400 for a request that is malformed as sent."""
    return RequestError(400, detail, problem_type=problem_type)
