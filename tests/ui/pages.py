"""What the dashboard's browser tests share: its URL on a running stack, a submit to it, and a
page's console (which the tests want empty)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.client import Client
from tests.support.stack import Stack

if TYPE_CHECKING:
    from playwright.sync_api import Page, Request


def submit(stack: Stack, definition: str | object) -> str:
    with Client(stack.url.removesuffix("/api")) as client:
        return client.submit(definition).id  # type: ignore[arg-type]


class Console:
    """Console errors, uncaught exceptions and failed requests of a page: the tests want none."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        self.expected: list[str] = []
        """Substrings of errors a test provokes on purpose (a 401 it asked the API to answer)."""
        page.on("console", lambda m: self._error(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", self._failed)

    def _error(self, text: str) -> None:
        if not any(part in text for part in self.expected):
            self.errors.append(text)

    def _failed(self, request: Request) -> None:
        # A navigation aborts the requests of the page it leaves: that is not the page's fault.
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"request failed ({request.failure}): {request.url}")


def dashboard_url(stack: Stack, fragment: str = "") -> str:
    """``http://127.0.0.1:PORT/api/ui#...`` of the stack."""
    return f"{stack.url}/ui{fragment}"
