"""A run's webhooks in a real browser (Playwright + Debian's chromium) on the real stack (issue 29):
the run header says who is told when the run ends — each webhook's host and events, its format
and whether it is signed — and never a webhook's full URL or its secret."""

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

# Only `failed` is asked for and the run completes: nothing is delivered (no DNS in tests).
TOLD = """
name: told
default_queue: cpu
notify:
  - {url: "https://hooks.example.com/dagq/abc", events: [failed, task_failed], secret: s3cret}
  - {url: "https://hooks.slack.com/services/T000/B000/XXXX", events: [failed], format: slack}
tasks:
  - {name: only, kwargs: {cmd: "echo hi"}}
"""


def test_the_run_header_names_the_webhooks_by_host(page: Page, stack: Stack) -> None:
    with Client(stack.url.removesuffix("/api")) as client:
        workflow_id = client.submit(TOLD).id
        assert client.wait(workflow_id, timeout_s=120).status == "completed", stack.diagnostics()
    page.goto(dashboard_url(stack, f"#/runs/{workflow_id}"))
    line = page.locator("#run-notify")
    expect(line).to_contain_text("hooks.example.com (failed, task_failed; signed)")
    expect(line).to_contain_text("hooks.slack.com (failed; slack)")
    text = page.locator("body").inner_text()
    assert "s3cret" not in text
    assert "T000" not in text  # a Slack URL's path is its credential
