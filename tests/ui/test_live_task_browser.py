"""The dashboard shows long work as it happens (issue 20), in a real browser against the real
stack: a running task's log grows in the panel, its progress bar moves, and an attempt picker
switches between two attempts' logs. Everything a task printed is shown as text, never HTML."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.support.stack import Stack
from tests.ui.pages import dashboard_url, submit

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (make install adds it)"
).expect

TRAINING = r"""
name: live-training
default_queue: cpu
tasks:
  - name: train
    num_retries: 1
    kwargs:
      cmd: |
        if [ "$DAGQ_ATTEMPT" = 1 ]; then
          echo '<img src=x onerror=alert(1)> first attempt'
          for i in $(seq 1 20); do
            echo "step $i"
            echo "{\"progress\": $(( i * 5 ))e-2, \"loss\": 0.$(( 90 - i ))}" >> "$DAGQ_PROGRESS"
            sleep 1
          done
          echo "simulated network error" >&2
          exit 75
        fi
        echo "second attempt ok"
"""


def test_a_log_grows_a_progress_bar_moves_and_the_picker_switches_attempts(
    page: Page, stack: Stack
) -> None:
    workflow_id = submit(stack, TRAINING)
    page.goto(dashboard_url(stack, f"#/runs/{workflow_id}?task=train"))

    # The log grows in the panel while the attempt runs (no upload-at-the-end wait).
    log = page.locator("#task-log pre.log-text")
    expect(log).to_contain_text("step 1", timeout=60_000)
    seen = max(int(n) for n in re.findall(r"step (\d+)", log.inner_text()))
    assert seen < 20, "too late to see the log grow"
    expect(log).to_contain_text(f"step {seen + 1}\n", timeout=30_000)
    expect(page.locator("#log-note")).to_contain_text("Live")
    # What the task printed is text: no element was made of it.
    assert "<img src=x onerror=alert(1)>" in log.inner_text()
    assert page.locator("#task-log img").count() == 0

    # The progress bar moves (its value grows), and the metrics are shown beside it.
    bar = page.locator("#task-progress [role=progressbar]")
    bar.wait_for(timeout=30_000)
    start = int(bar.get_attribute("aria-valuenow") or 0)
    expect(bar).not_to_have_attribute("aria-valuenow", str(start), timeout=30_000)
    assert int(bar.get_attribute("aria-valuenow") or 0) > start
    expect(page.locator("#task-progress .metrics")).to_contain_text("loss")
    node = page.locator("svg.dag .node[data-name='train'] .progress-fill")
    expect(node).to_have_attribute("visibility", "visible")

    # Attempt 1 fails (exit 75) and is retried: the picker offers both attempts' logs.
    picker = page.locator("#attempt-picker")
    picker.wait_for(timeout=60_000)
    expect(page.locator("h1 .badge", has_text="completed")).to_be_visible(timeout=60_000)
    expect(page.locator("#task-log pre.log-text")).to_contain_text("second attempt ok")
    picker.select_option("1")
    expect(page.locator("#task-log pre.log-text")).to_contain_text("simulated network error")
    expect(page.locator("#attempt-facts")).to_contain_text("75")
    page.locator("#attempt-picker").select_option("2")
    expect(page.locator("#task-log pre.log-text")).to_contain_text("second attempt ok")

    # Both attempts are on the Gantt chart.
    page.get_by_role("tab", name="Gantt").click()
    expect(page.locator("svg.gantt rect.bar[data-task='train']")).to_have_count(2)


def test_the_workers_page_shows_gpu_use(page: Page, stack: Stack) -> None:
    page.goto(dashboard_url(stack, "#/workers"))
    expect(page.locator("#workers table")).to_be_visible()
    expect(page.locator("#workers thead")).to_contain_text("GPUs")
