"""The client's errors, on the kernel's base class (``shared.errors.DagqError``): only the client
raises them and only its users (the CLI, ``dagq``) catch them, so they live in its room.

- ``ApiError``: the API answered with an error (its RFC 7807 problem details);
- ``ApiUnreachableError``: the API could not be reached;
- ``WaitTimeoutError``: ``wait`` gave up first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from shared.errors import DagqError


class ApiError(DagqError):
    """The API answered with an error: carries its RFC 7807 problem details."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        *,
        type_: str | None = None,
        url: str | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = list(errors or [])
        self.type = type_
        self.url = url
        self.extra: dict[str, Any] | None = None
        """The whole problem document, when the API sent one."""
        super().__init__(self.describe())

    def describe(self) -> str:
        """A readable multi-line account of the problem (title, detail, each listed error)."""
        head = f"{self.title} (HTTP {self.status})"
        if self.errors:  # the API's detail speaks of its JSON ("every entry of 'errors'")
            head += f": {len(self.errors)} problem(s); fix each one below and try again"
        elif self.detail and self.detail != self.title:
            head += f": {self.detail}"
        lines = [head]
        for err in self.errors:
            lines.append("  - " + _describe_issue(err))
        return "\n".join(lines)

    @property
    def is_not_found(self) -> bool:
        """The workflow, task, log or output does not exist (404)."""
        return self.status == 404

    @property
    def is_invalid_definition(self) -> bool:
        """The submitted definition (or a parameter) was rejected (400, 413, 415, 422)."""
        return self.status in (400, 413, 415, 422)

    @property
    def is_conflict(self) -> bool:
        """The request conflicts with the workflow's state (409)."""
        return self.status == 409


def _describe_issue(err: Mapping[str, Any] | Any) -> str:
    if not isinstance(err, Mapping):
        return str(err)
    location = err.get("location")
    message = err.get("message") or err.get("detail") or json.dumps(err)
    return f"{location}: {message}" if location else str(message)


class ApiUnreachableError(DagqError):
    """The API could not be reached (connection refused, DNS, timeout)."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting
        """Nothing listens at the URL (refused, no such host) or what answers is not a dagq API:
        asking again at once would fail the same way (a timeout may not)."""


class WaitTimeoutError(DagqError):
    """``wait`` gave up before the workflow reached a terminal status."""
