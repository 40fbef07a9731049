"""Every table the CLI prints fits the terminal without cutting a number or a unit: at 80 and 60
columns, with long names and large numbers, each number, duration, amount and count is shown
whole (or its whole column is left out), names are elided in the middle, and no line is wider
than the terminal (issue 20: ``10/…`` and ``1m44`` without its unit at 80 columns)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console, RenderableType

from shared.cli import cost_render, live_render, ops_render, render, style, utilization
from shared.cli.fit_table import HARD_FLOOR, Column, FitTable
from shared.views import (
    AttemptList,
    CostReport,
    WorkersView,
    Workflow,
    WorkflowCost,
    WorkflowSummary,
)
from tests.support.fake_api import task_body, workflow_body

NOW = 2_000_000_000.0
LONG = "preprocess-the-entire-imagenet-validation-split-for-evaluation"
WF_ID = "20261129-115012-k3x9qa"


def lines_of(renderable: RenderableType, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert all(len(line) <= width for line in text.splitlines()), text
    return text.splitlines()


def assert_whole(lines: list[str], wanted: dict[str, list[str]]) -> None:
    """Each value of a column shown (its header in the header line) appears whole."""
    text = "\n".join(lines)
    assert "…" not in lines[0], f"a header is cut:\n{text}"
    for column, values in wanted.items():
        if column not in lines[0]:
            continue  # the whole column was left out for the width
        for value in values:
            for word in value.split():
                assert re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", text), (
                    f"{column!r}: {word!r} is cut in\n{text}"
                )


def assert_name(lines: list[str], name: str) -> None:
    """A name appears whole, or elided in the middle: its start … its end, on one line."""
    if any(name in line for line in lines):
        return
    elided = [m for line in lines for m in re.findall(r"[\w.-]*…[\w.-]*", line)]
    assert any(
        name.startswith(e.split("…")[0]) and name.endswith(e.split("…")[1]) for e in elided
    ), (name, lines)


def _summary() -> WorkflowSummary:
    body = workflow_body(
        id=WF_ID,
        name=LONG,
        total=10000,
        counts={"completed": 9999},
        created_at=NOW - 104,
        finished_at=NOW,
    )
    return WorkflowSummary.model_validate(body | {"queues": ["gpu"], "url": "u"})


def _workflow() -> Workflow:
    tasks = {
        f"{LONG}-0001": task_body(
            state="completed",
            attempt=12,
            queue="gpu-a100-large",
            started_at=NOW - 104,
            finished_at=NOW,
            exit_code=0,
        ),
        "b": task_body(
            state="failed",
            attempt=3,
            started_at=NOW - 7200,
            finished_at=NOW,
            exit_code=137,
            error="killed by signal 9: out of memory in the loader",
        ),
    }
    body = workflow_body(id=WF_ID, name=LONG, total=2, counts={"completed": 1, "failed": 1})
    return Workflow.model_validate(body | {"tasks": tasks})


def _cost() -> WorkflowCost:
    task = {
        "name": f"{LONG}-0001",
        "queue": "gpu-a100-large",
        "gpus": 8,
        "attempts": 12,
        "run_s": 36104,
        "wait_s": 7200,
        "gpu_hours": 1234.567,
        "cpu_hours": 5678.901,
        "estimated_cost": 12345.67,
    }
    return WorkflowCost(
        id=WF_ID,
        name=LONG,
        currency="USD",
        gpu_hours=1234.5,
        cpu_hours=5678.9,
        queue_wait_hours=1.0,
        compute_cost=12345.67,
        storage_requests=1e6,
        storage_cost=1.2,
        estimated_cost=12346.87,
        cached_saved_hours=0,
        cached_saved_cost=0,
        tasks=[task],
    )


def _report() -> CostReport:
    group = {
        "key": LONG,
        "workflows": 12345,
        "gpu_hours": 123456.789,
        "cpu_hours": 98765.432,
        "estimated_cost": 1234567.89,
        "cached_saved_hours": 1234.567,
    }
    return CostReport(
        since=NOW,
        by="name",
        currency="USD",
        workflows=12345,
        truncated=False,
        gpu_hours=1,
        cpu_hours=1,
        estimated_cost=1,
        cached_saved_hours=1,
        groups=[group],
    )


def _attempts() -> AttemptList:
    item = {
        "attempt": 12,
        "current": True,
        "kept": True,
        "state": "failed",
        "queue": "gpu",
        "queued_at": NOW - 200,
        "started_at": NOW - 104,
        "finished_at": NOW,
        "exit_code": 137,
        "error": "killed by signal 9",
        "worker": f"worker-{LONG}",
        "log": None,
        "log_url": None,
    }
    return AttemptList(workflow_id=WF_ID, task="t", items=[item])


def _workers() -> WorkersView:
    gpus = [
        {"index": i, "utilization": 87, "memory_used_mib": 30000, "memory_total_mib": 81920}
        for i in range(4)
    ]
    task = {
        "workflow_id": WF_ID,
        "task": "train",
        "attempt": 12,
        "progress": 0.3,
        "metrics": {"epoch": 12, "loss": 0.21},
    }
    worker = {
        "worker_id": f"gpu-node-{LONG}",
        "host": "h",
        "queues": ["gpu-a100-large", "cpu"],
        "slots": 16,
        "busy_slots": 16,
        "version": "1.2.3",
        "started_at": NOW - 100000,
        "last_seen": NOW - 104,
        "status": "alive",
        "busy_s": 90000,
        "gpus": gpus,
        "tasks": [task],
    }
    return WorkersView(lost_after_s=60, workers=[worker])


CASES: dict[str, tuple[Callable[[], RenderableType], dict[str, list[str]], list[str]]] = {
    "list": (
        lambda: render.list_table([_summary()]),
        {"done": ["9999/10000"], "took": ["1m44s"], "status": ["running"], "id": [WF_ID]},
        [LONG],
    ),
    "status": (
        lambda: render.task_table(_workflow(), None)[0],
        {
            "try": ["12", "3"],
            "took": ["1m44s", "2h00m00s"],
            "exit": ["137"],
            "state": ["completed", "failed"],
        },
        [f"{LONG}-0001"],
    ),
    "watch queues": (
        lambda: render.queue_table(_workflow().tasks),
        {"done": ["1"], "failed": ["1"]},
        ["gpu-a100-large"],
    ),
    "cost": (
        lambda: cost_render.render(_cost()),
        {
            "ran": ["10h01m44s"],
            "waited": ["2h00m00s"],
            "gpu-h": ["1234.567"],
            "cpu-h": ["5678.901"],
            "cost": ["12345.6700 USD"],
            "tries": ["12"],
        },
        [f"{LONG}-0001"],
    ),
    "cost by name": (
        lambda: cost_render.render(_report()),
        {
            "workflows": ["12345"],
            "gpu-h": ["123456.789"],
            "cpu-h": ["98765.432"],
            "cost": ["1234567.8900 USD"],
            "saved-h": ["1234.567"],
        },
        [LONG],
    ),
    "attempts": (
        lambda: live_render.attempts_table(_attempts()),
        {"took": ["1m44s"], "exit": ["137"], "started": ["03:31:36"], "queued": ["03:30:00"]},
        [f"worker-{LONG}"],
    ),
    "workers": (
        lambda: ops_render.workers_table(_workers(), NOW),
        {
            "busy": ["16/16"],
            "seen": ["1m44s ago"],
            "up": ["27h46m40s"],
            "gpus": ["0:87% 29.3/80G"],
            "running": ["30% epoch=12 loss=0.21"],
        },
        [f"gpu-node-{LONG}"],
    ),
    "utilization": (
        lambda: utilization.utilization_table(_workers()),
        {"busy": ["25h00m00s"], "slot-time": ["443h58m56s"], "utilization": ["6%"]},
        ["gpu-a100-large"],
    ),
}


FIRST_HEADER = {"cost": "task ", "cost by name": "name "}
"""Where the table starts in views with text above it."""


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize("case", list(CASES))
def test_every_table_keeps_numbers_and_units_whole(case: str, width: int) -> None:
    build, whole, names = CASES[case]
    lines = lines_of(build(), width)
    first = FIRST_HEADER.get(case, "")
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    assert_whole(lines[start:], whole)
    for name in names:
        assert_name(lines, name)


@pytest.mark.parametrize("width", [80, 60])
def test_the_status_header_keeps_each_figure_with_its_unit(width: int) -> None:
    pace = render.Pace(elapsed_s=6264, rate=1.5, eta_s=104)
    text = "\n".join(lines_of(render.live_view(_workflow(), pace), width))
    for phrase in ("elapsed 1h44m24s", "1.5 tasks/s", "ETA 1m44s", "2/2 tasks finished"):
        assert phrase in text, text


names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=90)


@settings(max_examples=60, deadline=None)
@given(
    name=names,
    done=st.integers(0, 10**7),
    took=st.floats(0, 10**7),
    width=st.integers(60, 160),
)
def test_list_keeps_ids_counts_and_durations_whole_at_any_width(
    name: str, done: int, took: float, width: int
) -> None:
    body = workflow_body(
        id=WF_ID,
        name=name,
        total=done + 1,
        counts={"completed": done},
        created_at=NOW - took,
        finished_at=NOW,
    )
    item = WorkflowSummary.model_validate(body | {"queues": [], "url": "u"})
    lines = lines_of(render.list_table([item]), width)
    assert_whole(
        lines, {"id": [WF_ID], "done": [f"{done}/{done + 1}"], "took": [style.duration(took)]}
    )
    assert "done" in lines[0]  # the count is never the column left out
    assert_name(lines, name)


whole_cells = st.one_of(
    st.integers(0, 10**9).map(str),
    st.tuples(st.integers(0, 10**6), st.integers(1, 10**6)).map(lambda p: f"{p[0]}/{p[1]}"),
    st.floats(0, 10**7).map(style.duration),
    st.floats(0, 10**7).map(lambda v: f"{v:.4f} USD"),
)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(names, st.lists(whole_cells, min_size=4, max_size=4)), min_size=1, max_size=4
    ),
    width=st.integers(60, 160),
)
def test_a_fit_table_shows_each_whole_cell_whole_or_leaves_its_column_out(
    rows: list[tuple[str, list[str]]], width: int
) -> None:
    """The policy itself, whatever the cells: whole columns whole or gone, names elided in the
    middle, nothing wider than the terminal."""
    columns = [Column("name", "name", floor=20), Column("c0", right=True)]
    columns += [Column(f"c{i}", right=True, drop=i) for i in range(1, 4)]
    table = FitTable(columns)
    for name, cells in rows:
        table.add_row(name, *cells)
    if table.natural(1) + 1 + HARD_FLOOR + 1 > width:
        return  # the never-dropped column alone does not fit: outside what the layout promises
    lines = lines_of(table, width)
    header = lines[0].split()
    assert "c0" in header
    for i in range(4):
        if f"c{i}" in header:
            assert_whole(lines, {f"c{i}": [cells[i] for _, cells in rows]})
    for name, _ in rows:
        assert_name(lines, name)
