"""The compiler's pipeline: the passes run in the order the compiler documents, each once; a
problem found by one pass does not hide those of the next ones; only the budgets pass stops
early."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import shared.definition.compiler as compiler
from shared.definition.passes import (
    acyclic,
    budgets,
    build,
    cache,
    dependencies,
    expansion,
    foreach_from,
    notify,
    params,
    values,
)
from tests.definition.helpers import compile_dict, issues_of, task, workflow

PASSES: dict[str, tuple[Any, str]] = {
    "values": (values, "check_workflow_fields"),
    "params": (params, "resolve_params"),
    "expansion": (expansion, "expand_tasks"),
    "budgets": (budgets, "check_budgets"),
    "dependencies": (dependencies, "resolve_dependencies"),
    "foreach_from": (foreach_from, "resolve_foreach_from"),
    "acyclic": (acyclic, "check_acyclic"),
    "cache": (cache, "check_cache"),
    "notify": (notify, "check_notify"),
    "build": (build, "build_workflow"),
}
"""Each pass's module and entry point."""


def documented_order() -> list[str]:
    """The order the compiler's docstring states (``values -> expansion -> ...``)."""
    doc = compiler.__doc__ or ""
    lines = [ln.strip() for ln in doc.splitlines()]
    (start,) = [i for i, ln in enumerate(lines) if ln.startswith("values ->")]
    line = lines[start]
    for more in lines[start + 1 :]:  # (the order may go on, on lines that start with ->)
        if not more.startswith("->"):
            break
        line += " " + more
    return re.split(r"\s*->\s*", line)


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the passes, in the order they ran."""
    calls: list[str] = []

    def spy(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            calls.append(name)
            return fn(*args)

        return wrapper

    for name, (module, function) in PASSES.items():
        monkeypatch.setattr(module, function, spy(name, getattr(module, function)))
    return calls


def test_the_documented_order_is_the_issue_s() -> None:
    assert documented_order() == [
        "values",
        "params",  # (issue 29: the workflow parameters, before anything renders a task)
        "expansion",
        "budgets",
        "dependencies",
        "foreach_from",
        "acyclic",
        "cache",
        "notify",
        "build",
    ]
    assert list(PASSES) == documented_order()


def test_the_passes_run_once_each_in_the_documented_order(ran: list[str]) -> None:
    compile_dict(workflow(task("a"), task("b", depends_on=["a"])))
    assert ran == documented_order()


def test_a_shape_error_still_runs_every_pass_over_what_parsed(ran: list[str]) -> None:
    issues = issues_of(
        workflow(task("a"), {"name": "b", "kwargs": {}}, task("c", depends_on=["x"]))
    )
    assert ran == documented_order()
    assert [i.location for i in issues] == ["tasks.b.kwargs.cmd", "tasks.c.depends_on"]


def test_every_pass_reports_its_problems_in_one_run(ran: list[str]) -> None:
    issues = issues_of(
        workflow(
            task("a", " "),  # values of a final task (expansion)
            task("b", depends_on=["nope"]),  # dependencies
            task("d", "echo {{ item }}", depends_on=["a"], foreach_from="outputs.a"),
            task("x", depends_on=["y"]),  # acyclic
            task("y", depends_on=["x"]),
            name=" ",  # values
            notify=[{"url": "ftp://hooks.example.com/"}],  # notify
        )
    )
    assert ran == documented_order()
    assert [i.location for i in issues] == [
        "name",
        "tasks.a.kwargs.cmd",
        "tasks.b.depends_on",
        "tasks.d.foreach_from",
        "tasks.x.depends_on",
        "notify[0].url",
    ]


def test_a_spent_budget_stops_before_the_dependencies(
    ran: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budgets, "MAX_TASKS", 3)
    issues = issues_of(workflow(*[task(f"t{i}", depends_on=["nope"]) for i in range(10)]))
    assert ran == ["values", "params", "expansion", "budgets"]
    assert [i.message for i in issues] == [
        "the workflow has more than 3 tasks after foreach expansion"
    ]
