"""A headless Chromium for the dashboard's browser tests and ``make screenshots``.

Playwright for Python drives Debian's ``chromium`` package (never a browser Playwright downloads).
Every request the page makes to anything but 127.0.0.1 is aborted, and Chromium's own background
traffic (updates, sync, field trials) is switched off, so nothing leaves the machine.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Route

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-domain-reliability",
    "--disable-features=Translate,OptimizationHints",
    "--metrics-recording-only", "--no-pings", "--disable-breakpad",
]  # fmt: skip
VIEWPORT = {"width": 1440, "height": 900}
"""A laptop screen."""


def chromium_path() -> str | None:
    """Debian's chromium (``$DAGQ_CHROMIUM`` overrides), or None when it is not installed."""
    candidate = os.environ.get("DAGQ_CHROMIUM") or "/usr/bin/chromium"
    return candidate if os.access(candidate, os.X_OK) else shutil.which("chromium")


def _local_only(route: Route) -> None:
    host = urlsplit(route.request.url).hostname
    if host == "127.0.0.1" or route.request.url.startswith(("data:", "blob:")):
        route.continue_()
    else:
        route.abort("blockedbyclient")


@contextmanager
def browser_context(scale: float = 1.0) -> Iterator[BrowserContext]:
    """A fresh browser context on a laptop-sized viewport that can reach only 127.0.0.1."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT, device_scale_factor=scale)  # type: ignore[arg-type]
            context.route("**/*", _local_only)
            yield context
            context.close()
        finally:
            browser.close()
