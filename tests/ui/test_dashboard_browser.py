"""The dashboard in a real browser against the real stack: the list, a live run of
examples/pipeline.yaml (graph and Gantt to completed), a task's log, cancel, a 10,000-task fan-out,
the worker view and the function key."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import pytest

from shared.client import Client
from tests.support.stack import EXAMPLES, Stack
from tests.ui.pages import Console, dashboard_url, submit

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (make install adds it)"
).expect

SLEEPER = """
name: sleeper
default_queue: cpu
tasks:
  - name: nap
    kwargs:
      cmd: echo napping; sleep 60
  - name: after
    depends_on: [nap]
    kwargs:
      cmd: echo never
"""

_HUNDRED = ", ".join(str(i) for i in range(100))
WIDE = f"""
name: wide
default_queue: bulk
max_parallelism: 1
tasks:
  - name: split
    kwargs: {{cmd: "true"}}
  - name: shard
    depends_on: [split]
    foreach:
      a: [{_HUNDRED}]
      b: [{_HUNDRED}]
    kwargs: {{cmd: "echo {{{{ a }}}} {{{{ b }}}}"}}
  - name: merge
    depends_on: [shard]
    kwargs: {{cmd: "true"}}
"""
"""1 + 10,000 + 1 tasks on a queue no worker polls (max_parallelism 1: one message queued)."""


def test_a_pipeline_run_goes_live_to_completed_in_the_graph_and_the_gantt(
    page: Page, stack: Stack
) -> None:
    workflow_id = submit(stack, EXAMPLES / "pipeline.yaml")
    page.goto(dashboard_url(stack))
    row = page.locator(f"tr[data-id='{workflow_id}']")
    row.wait_for()
    assert "train-eval-publish" in row.inner_text()
    row.get_by_role("link", name="train-eval-publish").click()

    # The DAG: prep -> 6 training runs (a small foreach is drawn expanded) -> evaluate -> publish.
    nodes = page.locator("svg.dag .node")
    nodes.first.wait_for()
    assert nodes.count() == 9
    assert page.locator("svg.dag path.edge").count() == 6 + 6 + 1
    # The Gantt chart follows the run live, bar by bar, to the end.
    page.get_by_role("tab", name="Gantt").click()
    gantt = page.locator("svg.gantt")
    gantt.wait_for()
    assert page.locator("h1 .badge").inner_text() != "completed", "too late to see it live"
    expect(gantt).to_have_attribute("data-finished", "9", timeout=90_000)
    page.locator("h1 .badge", has_text="completed").wait_for()
    page.get_by_role("tab", name="Graph").click()
    # (expect, not wait_for_function: the page's CSP forbids evaluating strings, rightly.)
    expect(page.locator("svg.dag .node[data-state='completed']")).to_have_count(9)
    page.get_by_role("tab", name="Gantt").click()  # (the hash changes, then the chart is drawn)
    expect(page.locator("svg.gantt rect.bar.b-completed")).to_have_count(9)
    # prep -> a training run -> evaluate -> publish
    expect(page.locator("svg.gantt rect.bar.critical")).to_have_count(4)
    path = page.locator("#critical-path").inner_text()
    assert re.search(r"prep → train\..* → evaluate → publish", path), path
    page.locator("#lane-by").select_option("worker")
    expect(page.locator("svg.gantt .lane-label")).to_have_count(2)  # the cpu and the gpu worker

    # A task's detail and log tail, then its full log.
    page.locator("svg.gantt rect.bar[data-task='evaluate']").click()
    facts = page.locator("#task-facts")
    facts.wait_for()
    assert "completed" in facts.inner_text()
    assert "exit code" in facts.inner_text()
    tail = page.locator("#task-log pre")
    tail.wait_for()
    assert tail.inner_text().strip()
    assert '"best"' in page.locator("#task-output pre").inner_text()
    page.locator("#full-log").click()
    full = page.locator("#full-log-text")
    full.wait_for()
    expect(full).not_to_have_text("Loading…")
    assert full.inner_text().strip()


def test_a_dynamic_fan_out_grows_in_the_graph_while_the_page_watches(
    page: Page, stack: Stack
) -> None:
    # examples/shards.yaml: list_shards decides at run time how many "process" tasks there are.
    workflow_id = submit(stack, EXAMPLES / "shards.yaml")
    page.goto(dashboard_url(stack, f"#/runs/{workflow_id}"))
    page.locator("svg.dag .node").first.wait_for()
    expanded = page.locator("svg.dag .node[data-name^='process.']")
    expect(expanded).to_have_count(7, timeout=90_000)  # 1,000 rows in shards of 150
    expect(page.locator("svg.dag .node[data-state='completed']")).to_have_count(
        9, timeout=90_000
    )  # list_shards, 7 shards, merge


def test_cancel_asks_for_confirmation_then_cancels_the_run(page: Page, stack: Stack) -> None:
    workflow_id = submit(stack, SLEEPER)
    page.goto(dashboard_url(stack, f"#/runs/{workflow_id}"))
    page.locator("svg.dag .node[data-name='nap'][data-state='running']").wait_for(timeout=60_000)
    cancel = page.locator("#cancel-run")
    cancel.focus()
    stamp = page.locator("#refresh-state")
    for _ in range(2):  # refreshes redraw the header without taking the keyboard focus away
        expect(stamp).not_to_have_text(stamp.inner_text(), timeout=10_000)
    expect(cancel).to_be_focused()
    page.keyboard.press("Enter")
    dialog = page.locator("#confirm-dialog")
    assert dialog.is_visible()
    page.get_by_role("button", name="Keep it").click()  # changing one's mind cancels nothing
    assert not dialog.is_visible()
    page.locator("#cancel-run").click()
    expect(page.locator("#confirm-yes")).to_have_class("danger")
    page.locator("#confirm-yes").click()
    # Feedback at once, before the coordinator has applied the cancel (issue 20).
    expect(page.locator("#cancel-run")).to_have_text("Cancelling…", timeout=2_000)
    page.locator("h1 .badge", has_text="cancelled").wait_for(timeout=60_000)
    assert (
        page.locator("svg.dag .node[data-name='after']").get_attribute("data-state") == "cancelled"
    )
    assert page.locator("#cancel-run").is_hidden()
    page.locator("#retry-run").click()  # a cancelled run can be rerun, from its cancelled tasks
    expect(page.locator("#confirm-yes")).to_have_class("primary")  # losing nothing: not red
    page.locator("#confirm-yes").click()
    page.locator("h1 .badge", has_text="running").wait_for(timeout=60_000)
    expect(page.locator("svg.dag .node[data-name='nap']")).to_have_attribute(
        "data-state", re.compile("queued|running")
    )
    assert page.locator(".run-head dd").nth(1).inner_text() == "2"  # run 2


def test_a_ten_thousand_task_fan_out_draws_as_a_handful_of_nodes(page: Page, stack: Stack) -> None:
    workflow_id = submit(stack, WIDE)
    page.goto(dashboard_url(stack, f"#/runs/{workflow_id}"))
    dag = page.locator("svg.dag")
    dag.wait_for()
    assert dag.get_attribute("data-tasks") == "10002"
    assert dag.get_attribute("data-nodes") == "3"  # split -> shard ×10000 -> merge
    print(f"ui_10k_layout_ms={dag.get_attribute('data-layout-ms')}")
    group = page.locator("svg.dag .node[data-kind='group']")
    assert "×10000" in (group.text_content() or "")
    assert "10000 tasks" in (group.get_attribute("aria-label") or "")
    group.focus()
    page.keyboard.press("Enter")
    panel = page.locator("aside.detail")
    panel.get_by_text("10000 tasks").wait_for()
    assert page.locator("#toggle-group").is_disabled()  # too many to draw one by one
    started = time.perf_counter()
    page.get_by_role("tab", name="Gantt").click()
    page.locator("svg.gantt").wait_for()
    print(f"ui_10k_gantt_ms={(time.perf_counter() - started) * 1000:.0f}")


def test_the_worker_view_shows_the_registry_or_says_it_is_missing(page: Page, stack: Stack) -> None:
    page.goto(dashboard_url(stack, "#/workers"))
    page.locator("#workers table, #no-registry").first.wait_for()
    if page.locator("#no-registry").count():
        assert "not available" in page.locator("#no-registry").inner_text()
    else:
        page.locator("#workers tr[data-worker]").first.wait_for()
        assert "cpu" in page.locator("#workers table").inner_text()
        # The machines up in the last day: the stack's worker, a dev box with no VM size.
        assert (
            page.locator("#pool")
            .inner_text()
            .startswith("Machines up in the last 24 h: (size not told) ×1:")
        )


def test_a_pasted_function_key_is_kept_and_sent_with_every_data_call(
    page: Page, stack: Stack
) -> None:
    page.goto(dashboard_url(stack))
    page.locator("table.list").wait_for()
    page.get_by_role("button", name=re.compile("API key")).click()
    page.locator("#key-input").fill("k3y-from-the-portal")
    with page.expect_request(re.compile(r"/api/workflows\?")) as request:
        page.locator("#key-save").click()
    assert request.value.headers.get("x-functions-key") == "k3y-from-the-portal"
    page.reload()
    with page.expect_request(re.compile(r"/api/workflows\?")) as again:
        page.locator("table.list").wait_for()
    assert again.value.headers.get("x-functions-key") == "k3y-from-the-portal"
    page.get_by_role("button", name=re.compile("API key")).click()
    page.locator("#key-clear").click()
    assert page.evaluate("localStorage.getItem('dagq.functionKey')") is None


def test_a_refused_call_asks_for_the_key_and_the_key_unlocks_the_api(
    page: Page, stack: Stack, console: list[Console]
) -> None:
    # The local host enforces no keys: the list answers 401 without the right one, as Azure does.
    console[0].expected.append("status of 401")

    def guard(route: Route) -> None:
        if route.request.headers.get("x-functions-key") == "the-right-key":
            route.continue_()
        else:
            route.fulfill(status=401, body="")

    page.route(re.compile(r".*/api/workflows\?.*"), guard)
    page.goto(dashboard_url(stack))
    dialog = page.locator("#key-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#banner")).to_contain_text("set a function key")
    page.locator("#key-input").fill("the-right-key")
    page.locator("#key-save").click()
    expect(page.locator("table.list tbody tr").first).to_be_visible()
    expect(page.locator("#banner")).to_be_hidden()


TYPO = """
name: typo
default_queue: cpu
tasks:
  - name: train
    queue: gpus
    kwargs: {cmd: "echo never"}
"""
"""A task on a queue no worker polls (``gpus`` for ``gpu``): it would wait forever."""


def test_a_task_on_a_queue_no_live_worker_polls_is_marked_with_what_to_do(
    page: Page, stack: Stack
) -> None:
    workflow_id = submit(stack, TYPO)
    try:
        page.goto(dashboard_url(stack, f"#/runs/{workflow_id}"))
        node = page.locator("svg.dag .node[data-name='train']")
        expect(node).to_have_attribute("data-state", "queued", timeout=30_000)
        # After a short grace (a worker polling an idle queue backs off for a few seconds).
        notice = page.locator("#unserved")
        expect(notice).to_contain_text("no live worker polls", timeout=45_000)
        expect(notice).to_contain_text("'gpus'")
        expect(notice).to_contain_text("dagq-worker gpus")
        expect(node).to_have_attribute("data-unserved", "gpus")
        expect(node.locator("text.sub")).to_have_text("queued · no worker polls gpus")
    finally:
        with Client(stack.url.removesuffix("/api")) as client:
            client.cancel(workflow_id)
