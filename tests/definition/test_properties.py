"""Property-based tests: random DAGs compile, back edges report a real cycle, foreach and quoting
behave for any values."""

from __future__ import annotations

import itertools
import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.definition.conditions import ParentView, compile_condition
from shared.definition.templating import parse_template, render_value, variable_env
from shared.errors import DefinitionError
from shared.names import safe_name_problem
from tests.definition.helpers import compile_dict, task, workflow

PROFILE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(names in topological order, name -> dependencies, definition order)."""
    n = draw(st.integers(min_value=1, max_value=25))
    names = [f"t{i}" for i in range(n)]
    deps: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        deps[name] = (
            draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=4)) if i else []
        )
    order = draw(st.permutations(names))
    return names, deps, list(order)


@PROFILE
@given(dags())
def test_any_acyclic_graph_compiles_with_consistent_indices(
    dag: tuple[list[str], dict[str, list[str]], list[str]],
) -> None:
    _, deps, order = dag
    wf = compile_dict(workflow(*(task(name, depends_on=deps[name]) for name in order)))
    assert [t.name for t in wf.tasks] == order
    for i, t in enumerate(wf.tasks):
        assert [wf.tasks[p].name for p in t.parents] == deps[t.name]
        assert all(i in wf.children[p] for p in t.parents)
    assert sum(len(c) for c in wf.children) == sum(len(d) for d in deps.values())
    assert {wf.tasks[i].name for i in wf.roots} == {n for n, d in deps.items() if not d}
    assert {wf.tasks[i].name for i in wf.sinks} == set(order) - {
        d for ds in deps.values() for d in ds
    }


@PROFILE
@given(dags(), st.data())
def test_a_back_edge_reports_a_cycle_of_real_edges(
    dag: tuple[list[str], dict[str, list[str]], list[str]], data: st.DataObject
) -> None:
    topo, deps, order = dag
    # Pick a path ancestor -> ... -> descendant and make the ancestor depend on the descendant.
    descendants = [n for n in topo if deps[n]]
    if not descendants:
        return
    low = data.draw(st.sampled_from(descendants))
    high = data.draw(st.sampled_from(deps[low]))
    deps = {**deps, high: [*deps[high], low]}
    try:
        compile_dict(workflow(*(task(name, depends_on=deps[name]) for name in order)))
    except DefinitionError as exc:
        (issue,) = exc.issues
    else:  # pragma: no cover
        raise AssertionError("a cycle compiled")
    assert issue.message.startswith("dependency cycle: ")
    cycle = issue.message.split("(tasks in the cycle: ")[1].rstrip(")").split(", ")
    assert issue.task == cycle[0]
    assert issue.location == f"tasks.{cycle[0]}.depends_on"
    for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
        assert b in deps[a], f"{a} does not depend on {b}"


values = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=20),
)


@PROFILE
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True),
        st.lists(values, min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    )
)
def test_matrix_expansion_order_and_names(matrix: dict[str, list[object]]) -> None:
    definition = workflow(task("m", foreach=matrix), task("sink", depends_on=["m"]))
    repeated = any(len({render_value(v) for v in vs}) < len(vs) for vs in matrix.values())  # type: ignore[arg-type]
    if repeated:
        # Only repeated values may make two expansions share a name.
        with pytest.raises(DefinitionError, match="foreach values must be distinct"):
            compile_dict(definition)
        return
    wf = compile_dict(definition)
    combos = list(itertools.product(*matrix.values()))
    expansions = wf.tasks[:-1]
    assert len(expansions) == len(combos)
    assert [tuple(t.params.values()) for t in expansions if t.params] == combos
    assert all(safe_name_problem(t.name) is None for t in expansions)
    assert wf.tasks[-1].parents == tuple(range(len(combos)))


@PROFILE
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=40,
    )
)
def test_quoted_value_is_exactly_one_shell_word(value: str) -> None:
    cmd = parse_template("prog {{ v }} end").render({"v": value}, quote=True)
    words = shlex.split(cmd)
    if "\n" in value or "\r" in value:
        # A value with a line break is read from its variable, which holds exactly the value.
        assert words == ["prog", "$DAGQ_VAR_v", "end"]
        assert variable_env({"v": value}) == {"DAGQ_VAR_v": value}
    else:
        assert words == ["prog", value, "end"]


@PROFILE
@given(
    st.integers(-1000, 1000),
    st.integers(-1000, 1000),
    st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
)
def test_comparisons_match_arithmetic(x: int, c: int, op: str) -> None:
    cond = compile_condition(f"inputs.a.x {op} {c}", ["a"])
    expected = {"<": x < c, "<=": x <= c, ">": x > c, ">=": x >= c, "==": x == c, "!=": x != c}[op]
    assert cond.evaluate({"a": ParentView("completed", {"x": x})}) is expected


@PROFILE
@given(
    st.lists(
        st.tuples(st.sampled_from(["completed", "failed", "skipped"]), st.floats(0, 1)),
        min_size=1,
        max_size=12,
    ),
    st.floats(0, 1),
)
def test_glob_aggregates(members: list[tuple[str, float]], threshold: float) -> None:
    parents = [f"train.{i}" for i in range(len(members))]
    views = {
        p: ParentView(state, {"acc": acc} if state == "completed" else None)
        for p, (state, acc) in zip(parents, members, strict=True)
    }
    done = [acc for state, acc in members if state == "completed"]

    def ev(expr: str) -> bool:
        return compile_condition(expr, parents).evaluate(views)

    assert ev(f'count(inputs["train.*"]) == {len(done)}')
    assert ev(f'any(inputs["train.*"].acc > {threshold!r})') is any(a > threshold for a in done)
    assert ev(f'all(inputs["train.*"].acc > {threshold!r})') is all(a > threshold for a in done)
    failed = sum(1 for state, _ in members if state == "failed")
    assert ev(f'count(state("train.*") == "failed") == {failed}')
