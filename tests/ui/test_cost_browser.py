"""The run page's cost panel in a real browser (Playwright + Debian's chromium) on the real stack:
GPU-hours, CPU-hours, the estimate and what the result cache saved; a reused task's detail says
where its result came from."""

from __future__ import annotations

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

CACHED = """
name: cached-gpu
default_queue: cpu
tasks:
  - name: prep
    kwargs: {cmd: "echo prep"}
  - name: train
    depends_on: [prep]
    queue: gpu
    gpus: 1
    cache: true
    kwargs: {cmd: "sleep 2; echo trained"}
"""


def run_to_end(stack: Stack) -> str:
    with Client(stack.url.removesuffix("/api")) as client:
        workflow_id = client.submit(CACHED).id
        final = client.wait(workflow_id, timeout_s=120)
        assert final.status == "completed", stack.diagnostics()
        return workflow_id


def test_the_run_page_shows_its_cost_and_what_the_cache_saved(page: Page, stack: Stack) -> None:
    first = run_to_end(stack)
    second = run_to_end(stack)
    page.goto(dashboard_url(stack, f"#/runs/{first}"))
    panel = page.locator("#cost-panel")
    expect(panel).to_contain_text("GPU-hours", timeout=30_000)
    assert float(page.locator("#cost-gpu-hours").inner_text()) > 0  # train ran on a GPU
    assert "USD" in page.locator("#cost-estimate").inner_text()
    expect(page.locator("#cost-tasks")).to_contain_text("train")

    page.goto(dashboard_url(stack, f"#/runs/{second}?task=train"))
    expect(page.locator("#cost-saved")).to_contain_text("1 task reused")
    assert page.locator("#cost-gpu-hours").inner_text() == "0.0000"  # nothing ran on a GPU
    facts = page.locator("#task-facts")
    expect(facts).to_contain_text("cached from")
    expect(facts).to_contain_text(first)
    # The reused task's node says so (it did not run), not just "completed".
    expect(page.locator("svg.dag .node[data-name='train'] text.sub")).to_have_text("cached")
    # The deep-linked panel's title has the focus (for screen readers) but no focus ring: it
    # is not an input, and a ring made it look like a text box.
    title = page.locator("#detail-title")
    expect(title).to_be_focused()
    assert title.evaluate("el => getComputedStyle(el).outlineStyle") == "none"
