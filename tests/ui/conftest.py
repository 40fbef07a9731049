"""The dashboard's browser fixtures: the real stack (local host + cpu/gpu workers on the session's
Azurite) and a headless Debian chromium driven by Playwright that can reach only 127.0.0.1.

Browser tests are skipped, with the reason, only when chromium or the playwright package cannot be
had (``make test`` installs both where it can).
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from devtools.azurite import Azurite
from devtools.browser import browser_context, chromium_path
from tests.cli.conftest import Stack, start_workers, stop_workers
from tests.support.api_host import start_host

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Request


@pytest.fixture(scope="module")
def stack(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The app under the local host plus cpu and gpu workers, on a prefix of this module's own."""
    logs = Path(tmp_path_factory.mktemp("ui-stack"))
    env = {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "u" + uuid.uuid4().hex[:12]}
    host = start_host(env, logs / "host.log")
    workers = start_workers(env, logs)
    try:
        yield Stack(host=host, workers=workers, env=env, logs=logs)
    finally:
        stop_workers(workers)
        host.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserContext]:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the playwright package is not installed (make install adds it)")
    if chromium_path() is None:
        pytest.skip("chromium is not installed and could not be (apt-get install -y chromium)")
    with browser_context() as context:
        yield context


class Console:
    """Console errors, uncaught exceptions and failed requests of a page: the tests want none."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", self._failed)

    def _failed(self, request: Request) -> None:
        # A navigation aborts the requests of the page it leaves: that is not the page's fault.
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"request failed ({request.failure}): {request.url}")


@pytest.fixture
def page(browser: BrowserContext, stack: Stack) -> Iterator[Page]:
    """A fresh page; the test fails if the page logged any console error."""
    page = browser.new_page()
    page.set_default_timeout(30_000)
    console = Console(page)
    yield page
    page.close()
    assert console.errors == [], f"console errors: {console.errors}\n{stack.diagnostics()}"


def dashboard_url(stack: Stack, fragment: str = "") -> str:
    """``http://127.0.0.1:PORT/api/ui#...`` of the stack."""
    return f"{stack.url}/ui{fragment}"
