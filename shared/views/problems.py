"""Error answers: RFC 7807 problem documents (``application/problem+json``)."""

from __future__ import annotations

from shared.views.base import View


class IssueView(View):
    """One problem of an invalid definition."""

    location: str
    task: str | None
    message: str


class Problem(View):
    """An RFC 7807 problem document: every error answer (``application/problem+json``)."""

    type: str
    """``https://dagq.dev/problems/{slug}``; the slugs are listed in docs/api.md."""
    title: str
    status: int
    detail: str
    instance: str | None = None
    """The request path."""
    ref: str | None = None
    """A 500's reference in the app's log."""
    errors: list[IssueView] | None = None
    """Every problem of an invalid definition."""
    id: str | None = None
    """``incomplete-submit``: the workflow to complete with ``?id=``."""
