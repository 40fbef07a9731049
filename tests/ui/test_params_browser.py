"""A run's parameters end to end on the real stack (issue 29): given with the client's
``params=`` (the repeated ``?param=`` through the local host), filled into the command, set as
``DAGQ_PARAM_<NAME>`` by a real worker, and shown in the dashboard's run header."""

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

NIGHTLY = """
name: nightly-params
default_queue: cpu
params:
  note: {description: a value with quotes and spaces}
  lr: 0.1
  fast: false
tasks:
  - name: check
    kwargs:
      cmd: >-
        test "$DAGQ_PARAM_note" = {{ params.note }}
        && test "$DAGQ_PARAM_lr" = 0.01 && test "$DAGQ_PARAM_fast" = false
"""
NOTE = 'it\'s "$(touch PWNED)" a b'


def test_the_run_header_shows_the_parameters_the_tasks_ran_with(page: Page, stack: Stack) -> None:
    with Client(stack.url.removesuffix("/api")) as client:
        submitted = client.submit(NIGHTLY, params={"note": NOTE, "lr": 0.01})
        final = client.wait(submitted.id, timeout_s=90)
    assert final.status == "completed", final.error
    assert final.params == {"note": NOTE, "lr": 0.01, "fast": False}
    page.goto(dashboard_url(stack, f"#/runs/{submitted.id}"))
    params = page.locator("#run-params")
    expect(params.locator("[data-param='note'] dd")).to_have_text(NOTE)
    expect(params.locator("[data-param='lr'] dd")).to_have_text("0.01")
    expect(params.locator("[data-param='fast'] dd")).to_have_text("false")
    assert page.locator(".run-head dd").nth(1).inner_text() == "1"  # the run number stays put
