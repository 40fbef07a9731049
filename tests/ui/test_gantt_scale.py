"""The Gantt chart at scale and across retries, on made-up API answers (the browser still talks
only to 127.0.0.1: Playwright answers the workflow's two calls itself)."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import pytest

from tests.cli.conftest import Stack
from tests.support.synthetic_run import fan_out
from tests.ui.conftest import dashboard_url

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (make install adds it)"
).expect


def test_the_gantt_draws_ten_thousand_attempts_and_keeps_the_retries_it_saw(
    page: Page, stack: Stack
) -> None:
    graph, running = fan_out(10_000, merge_attempt=1, done=False)
    _, retried = fan_out(10_000, merge_attempt=2, done=True)
    answers = [running]
    page.route(re.compile(r".*/api/workflows/synthetic/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/synthetic$"), lambda r: r.fulfill(json=answers[-1]))
    started = time.perf_counter()
    page.goto(dashboard_url(stack, "#/runs/synthetic/gantt"))
    gantt = page.locator("svg.gantt")
    gantt.wait_for()
    print(f"ui_10k_gantt_page_ms={(time.perf_counter() - started) * 1000:.0f}")
    print(f"ui_10k_gantt_render_ms={gantt.get_attribute('data-render-ms')}")
    assert gantt.get_attribute("data-bars") == "10002"
    expect(page.locator("svg.gantt rect.bar")).to_have_count(10_002)

    answers.append(retried)  # the next refresh sees attempt 2 finished
    earlier = page.locator("svg.gantt rect.bar.b-retried[data-task='merge']")
    earlier.wait_for(timeout=20_000)
    assert earlier.get_attribute("data-attempt") == "1"
    current = page.locator("svg.gantt rect.bar.b-completed[data-task='merge']")
    assert current.get_attribute("data-attempt") == "2"
    assert "merge" in page.locator("#critical-path").inner_text()
    page.locator("#lane-by").select_option("worker")
    expect(page.locator("svg.gantt .lane-label")).to_have_count(8)
