"""Runs no local stack makes on demand, on made-up API answers: the Gantt chart at scale and across
retries, a DAG that grows when a foreach_from expands (the browser still talks only to 127.0.0.1:
Playwright answers the workflow's two calls itself)."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import pytest

from devtools.testing.synthetic_run import SHORT_ORDER, WORKERS, crossing, fan_out, sub_second
from tests.support.stack import Stack
from tests.ui.pages import dashboard_url

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (make install adds it)"
).expect


@pytest.fixture(autouse=True)
def _synthetic_extras(page: Page) -> None:
    """What the run page asks about a run besides its graph and state, answered for these
    synthetic runs (they are not in storage): no kept earlier attempts, so the Gantt chart draws
    the attempts it saw; and a cost of nothing."""
    page.route(re.compile(r".*/api/workflows/[^/]+/tasks/[^/]+/attempts$"), _no_kept_attempts)
    page.route(re.compile(r".*/api/workflows/[^/]+/cost$"), _no_cost)


def _no_kept_attempts(route: Route) -> None:
    workflow_id, _, task = route.request.url.split("/api/workflows/", 1)[1].split("/")[:3]
    route.fulfill(json={"workflow_id": workflow_id, "task": task, "items": []})


def _no_cost(route: Route) -> None:
    workflow_id = route.request.url.split("/api/workflows/", 1)[1].split("/")[0]
    zero = dict.fromkeys(
        ["gpu_hours", "cpu_hours", "queue_wait_hours", "compute_cost", "storage_requests",
         "storage_cost", "estimated_cost", "cached_saved_hours", "cached_saved_cost"], 0.0
    )  # fmt: skip
    route.fulfill(
        json={"id": workflow_id, "name": workflow_id, "currency": "USD", **zero, "tasks": []}
    )


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


def _task(state: str) -> dict[str, object]:
    return {"state": state, "attempt": 1 if state != "pending" else 0, "queue": "cpu",
            "queued_at": None, "started_at": None, "finished_at": None, "exit_code": None,
            "error": None, "worker": None}  # fmt: skip


def _dynamic(expansions: int) -> tuple[dict[str, object], dict[str, object]]:
    """list -> process (foreach_from) -> merge, before (0) or after its expansion."""
    tasks = [
        {"name": "list", "queue": "cpu", "group": None, "parents": []},
        {"name": "process", "queue": "cpu", "group": None, "parents": [0]},
    ]
    tasks += [
        {"name": f"process.{i}", "queue": "cpu", "group": "process", "parents": [0]}
        for i in range(expansions)
    ]
    merge_parents = list(range(2, 2 + expansions)) or [1]
    tasks.append({"name": "merge", "queue": "cpu", "group": None, "parents": merge_parents})
    states = {t["name"]: _task("pending") for t in tasks}
    states["list"] = _task("completed" if expansions else "running")
    view = {"id": "dynamic", "name": "dynamic", "status": "running", "run": 1,
            "created_at": 1_800_000_000.0, "updated_at": 1_800_000_001.0, "finished_at": None,
            "cancel_requested": False, "error": None, "total": len(tasks),
            "counts": {"pending": len(tasks) - 1, "running": 1}, "tasks": states}  # fmt: skip
    return {"id": "dynamic", "name": "dynamic", "tasks": tasks}, view


def test_the_graph_grows_when_a_foreach_from_expands(page: Page, stack: Stack) -> None:
    answers = [_dynamic(0)]
    page.route(
        re.compile(r".*/api/workflows/dynamic/graph$"), lambda r: r.fulfill(json=answers[-1][0])
    )
    page.route(re.compile(r".*/api/workflows/dynamic$"), lambda r: r.fulfill(json=answers[-1][1]))
    page.goto(dashboard_url(stack, "#/runs/dynamic"))
    template = page.locator("svg.dag .node[data-name='process']")
    template.wait_for()  # before its list is known, the foreach_from task is a node of its own
    answers.append(_dynamic(3))
    expect(page.locator("svg.dag .node[data-name^='process.']")).to_have_count(3, timeout=20_000)
    expect(template).to_have_count(0)  # its expansions stand for it now
    expect(page.locator("svg.dag path.edge")).to_have_count(6)


def test_a_finished_run_is_not_asked_for_again(page: Page, stack: Stack) -> None:
    graph, done = fan_out(10, merge_attempt=1, done=True)
    calls: list[str] = []

    def answer(route: Route) -> None:
        calls.append(route.request.url)
        route.fulfill(json=done)

    page.route(re.compile(r".*/api/workflows/synthetic/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/synthetic$"), answer)
    page.goto(dashboard_url(stack, "#/runs/synthetic"))
    page.locator("svg.dag").wait_for()
    page.wait_for_timeout(3000)  # longer than the refresh period of a running run (2 s)
    assert len(calls) == 1, calls  # it once refreshed as fast as the API answered


GANTT_GEOMETRY = """() => {
  const svg = document.querySelector("svg.gantt");
  const box = (el) => {
    const b = el.getBBox();
    return {x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height};
  };
  const label = (el) => ({task: el.dataset.task, text: el.textContent, ...box(el)});
  return {
    width: Number(svg.getAttribute("width")),
    from: Number(svg.dataset.axisFrom), to: Number(svg.dataset.axisTo),
    seconds: Number(svg.dataset.axisSeconds),
    bars: [...svg.querySelectorAll("rect.bar")].map((el) => ({task: el.dataset.task, ...box(el)})),
    labels: [...svg.querySelectorAll("text.bar-label")].map(label),
    lanes: [...svg.querySelectorAll("text.lane-label")].map((el) => el.textContent),
    ticks: [...svg.querySelectorAll(".tick text")].map((el) => el.textContent),
  };
}"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    across = a["x"] < b["right"] and b["x"] < a["right"]
    return across and a["y"] < b["bottom"] and b["y"] < a["bottom"]


@pytest.mark.parametrize("viewport_width", [1440, 800])
def test_a_sub_second_run_reads_in_the_gantt(page: Page, stack: Stack, viewport_width: int) -> None:
    graph, view = sub_second()
    page.route(re.compile(r".*/api/workflows/short/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/short$"), lambda r: r.fulfill(json=view))
    page.set_viewport_size({"width": viewport_width, "height": 900})
    page.goto(dashboard_url(stack, "#/runs/short/gantt"))
    expect(page.locator("svg.gantt rect.bar")).to_have_count(len(SHORT_ORDER))
    geo = page.evaluate(GANTT_GEOMETRY)
    # The axis fits the run (0.46 s), in milliseconds.
    assert len(geo["ticks"]) >= 3, geo["ticks"]
    assert all(t.endswith(" ms") for t in geo["ticks"][1:]), geo["ticks"]
    assert geo["seconds"] < 1
    assert max(bar["right"] for bar in geo["bars"]) >= geo["to"] - 1
    for bar in geo["bars"]:  # every bar visible (the 1 ms one too) and inside the axis
        assert bar["right"] - bar["x"] >= 2, bar
        assert bar["x"] >= geo["from"], (bar, geo)
        assert bar["right"] <= geo["to"] + 0.5, (bar, geo)
    assert sorted(label["text"] for label in geo["labels"]) == sorted(SHORT_ORDER)
    for label in geo["labels"]:  # whole, inside the chart, over no other bar or label
        assert label["text"] == label["task"]
        assert label["x"] >= 0, label
        assert label["right"] <= geo["width"], (label, geo["width"])
        others = [b for b in geo["bars"] if b["task"] != label["task"]]
        others += [other for other in geo["labels"] if other is not label]
        assert not any(_overlap(label, other) for other in others), (label, geo)
    page.locator("#lane-by").select_option("worker")
    expect(page.locator("svg.gantt .lane-label")).to_have_count(2)
    assert sorted(page.evaluate(GANTT_GEOMETRY)["lanes"]) == sorted(WORKERS)


def _column(page: Page, names: tuple[str, ...]) -> list[str]:
    """``names`` (the nodes of one column) from top to bottom."""
    top = {
        name: page.locator(f"svg.dag .node[data-name='{name}']").bounding_box()["y"]  # type: ignore[index]
        for name in names
    }
    return sorted(names, key=top.__getitem__)


def test_graph_columns_follow_the_definition_unless_that_crosses_edges(
    page: Page, stack: Stack
) -> None:
    """Within a column (tasks whose parents are drawn to their left), nodes are drawn top to
    bottom in the definition's order, unless that order crosses more edges than dagre's."""
    graph, view = sub_second()
    page.route(re.compile(r".*/api/workflows/short/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/short$"), lambda r: r.fulfill(json=view))
    page.goto(dashboard_url(stack, "#/runs/short"))
    page.locator("svg.dag .node").first.wait_for()
    assert _column(page, SHORT_ORDER[1:4]) == list(SHORT_ORDER[1:4])
    assert page.locator("svg.dag").get_attribute("data-order") == "definition"

    graph, view = crossing()
    page.route(re.compile(r".*/api/workflows/crossing/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/crossing$"), lambda r: r.fulfill(json=view))
    page.goto(dashboard_url(stack, "#/runs/crossing"))
    page.locator("svg.dag .node").first.wait_for()
    assert page.locator("svg.dag").get_attribute("data-order") == "fewer-crossings"
    first, second = _column(page, ("a1", "b1")), _column(page, ("a2", "b2"))
    assert [name[0] for name in first] == [name[0] for name in second]  # no crossing


def test_a_fan_draws_its_foreach_expansions_in_order_and_claims_the_definitions_order(
    page: Page, stack: Stack
) -> None:
    """``split -> s ×6 -> merge`` (a 1→6→1 fan, no crossing either way): the six expansions top to
    bottom as defined, and the graph says it follows the definition. Before, the long edges' bend
    points into ``merge`` tied and sorted by dagre's names (``_d10`` before ``_d6``), so the
    definition's order seemed to cross edges and dagre's reversed one won as 'fewer-crossings'."""
    graph, view = fan_out(6, merge_attempt=1, done=True)
    page.route(re.compile(r".*/api/workflows/synthetic/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/synthetic$"), lambda r: r.fulfill(json=view))
    page.goto(dashboard_url(stack, "#/runs/synthetic"))
    page.locator("svg.dag .node[data-name='merge']").wait_for()
    shards = tuple(f"s.{i}" for i in range(6))
    assert _column(page, shards) == list(shards)
    assert page.locator("svg.dag").get_attribute("data-order") == "definition"


def test_the_cost_panel_says_how_many_tasks_its_top_five_are_of(page: Page, stack: Stack) -> None:
    """Six priced tasks: the panel lists the five dearest and says "top 5 of 6", with every
    amount of money at one precision (``0.0000 USD`` beside ``1.2000 USD``, not ``0.00 USD``)."""
    graph, view = fan_out(4, merge_attempt=1, done=True)
    names = [t["name"] for t in graph["tasks"]]
    rows = [
        {"name": name, "queue": "cpu", "gpus": 0, "attempts": 1, "run_s": 60.0, "wait_s": 1.0,
         "gpu_hours": 0.0, "cpu_hours": 0.1, "estimated_cost": 0.2 * (i + 1)}
        for i, name in enumerate(names)
    ]  # fmt: skip
    cost = {
        "id": "synthetic", "name": "synthetic", "currency": "USD", "gpu_hours": 0.0,
        "cpu_hours": 0.6, "queue_wait_hours": 0.0, "compute_cost": 4.2, "storage_requests": 10.0,
        "storage_cost": 0.0, "estimated_cost": 4.2, "cached_saved_hours": 0.0,
        "cached_saved_cost": 0.0, "tasks": rows,
    }  # fmt: skip
    page.route(re.compile(r".*/api/workflows/synthetic/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/synthetic$"), lambda r: r.fulfill(json=view))
    page.route(re.compile(r".*/api/workflows/synthetic/cost$"), lambda r: r.fulfill(json=cost))
    page.goto(dashboard_url(stack, "#/runs/synthetic"))
    table = page.locator("#cost-tasks")
    expect(table.locator("tbody tr")).to_have_count(5)
    expect(table.locator("caption")).to_have_text("top 5 of 6 tasks by cost")
    expect(page.locator("#cost-estimate")).to_have_text("4.2000 USD")
    expect(page.locator("#cost-saved")).to_contain_text("0.0000 USD")
