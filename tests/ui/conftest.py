"""The dashboard's browser fixtures, over the real stack (``stack``: local host + cpu/gpu workers on
the session's Azurite, tests/support/stack.py) and a headless Debian chromium driven by Playwright
that can reach only 127.0.0.1.

Browser tests are skipped, with the reason, only when chromium or the playwright package cannot be
had (``make test`` installs both where it can).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from devtools.browser import browser_context, chromium_path
from tests.support.stack import Stack
from tests.ui.pages import Console

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserContext]:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the playwright package is not installed (make install adds it)")
    if chromium_path() is None:
        pytest.skip("chromium is not installed and could not be (apt-get install -y chromium)")
    with browser_context() as context:
        yield context


@pytest.fixture
def console() -> list[Console]:
    """The page's console watcher (one, once the page exists)."""
    return []


@pytest.fixture
def page(browser: BrowserContext, stack: Stack, console: list[Console]) -> Iterator[Page]:
    """A fresh page; the test fails if the page logged any console error."""
    page = browser.new_page()
    page.set_default_timeout(30_000)
    console.append(Console(page))
    yield page
    page.close()
    errors = console[0].errors
    assert errors == [], f"console errors: {errors}\n{stack.diagnostics()}"
