"""The dashboard's schedules view in a real browser (Playwright + Debian's chromium) on the real
stack: each schedule with its cron expression, next run and latest runs with their status, a run
linking to its page, a paused schedule said so."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from shared.client import Client
from tests.support.stack import Stack
from tests.ui.pages import dashboard_url

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (make install adds it)"
).expect

HELLO = "name: hello\ndefault_queue: cpu\ntasks:\n  - name: hi\n    kwargs: {cmd: echo hi}\n"


def test_the_schedules_view_shows_next_run_and_latest_runs(page: Page, stack: Stack) -> None:
    with Client(stack.url.removesuffix("/api")) as client:
        client.create_schedule("minutely", HELLO, cron="* * * * *")
        client.create_schedule("nightly", HELLO, cron="0 2 * * *", timezone="Europe/Berlin")
        client.pause_schedule("nightly")
        deadline = time.monotonic() + 75  # the stack's sweep starts the first slot's run
        while not client.schedule("minutely").runs:
            assert time.monotonic() < deadline, stack.diagnostics()
            time.sleep(1)
        run = client.schedule("minutely").runs[0]
        client.wait(run.id, timeout_s=60)

    page.goto(dashboard_url(stack, "#/schedules"))
    expect(page.locator("nav [data-nav=schedules]")).to_have_attribute("aria-current", "page")
    minutely = page.locator("tr[data-schedule=minutely]")
    expect(minutely).to_contain_text("* * * * *")
    expect(minutely.locator(".next-run")).not_to_have_text("–")
    latest = minutely.locator(f"li[data-run='{run.id}']")
    expect(latest.locator(".badge")).to_have_text("completed", timeout=30_000)
    nightly = page.locator("tr[data-schedule=nightly]")
    expect(nightly).to_contain_text("Europe/Berlin")
    expect(nightly.locator(".next-run")).to_have_text("paused")
    expect(nightly).to_contain_text("none yet")

    latest.locator("a").click()
    expect(page).to_have_url(dashboard_url(stack, f"#/runs/{run.id}"))
    expect(page.locator("main")).to_contain_text(run.id)
