"""Condition cost is bounded: counted in steps (never timed), refused at submit when the bound is
known to be over budget, and stopped while evaluating when outputs are larger than promised."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.definition.conditions import ParentView, compile_condition
from shared.definition.conditions.reads import OUTPUT_SIZE
from shared.errors import ConditionBudgetError, ConditionError
from shared.limits import MAX_CONDITION_STEPS
from shared.messages import INLINE_OUTPUT_BYTES
from tests.definition.helpers import one_issue, task, workflow

WEDGE = " and ".join(['all(inputs["p*"] == inputs["p.n=0"])'] * 6)
"""The reported shape: repeated whole-output comparisons over a 10,000-parent glob."""


def test_the_reported_wedge_is_refused_at_submit() -> None:
    # 10,000 parents x 4 KiB outputs x a condition of repeated all(inputs["p*"] == ...) took
    # 39-45 s per evaluation on the coordinator. Now its cost bound is over budget at submit.
    assert len(WEDGE) > 200
    issue = one_issue(
        workflow(
            task("p", "echo {{ n }}", foreach={"n": list(range(10_000))}),
            task("join", depends_on=["p"], condition=WEDGE),
        ),
        location="tasks.join.condition",
        contains="steps to evaluate with this task's 10,000 dependencies",
    )
    assert f"the limit is {MAX_CONDITION_STEPS:,}" in issue.message
    assert "compare small fields" in issue.message
    assert issue.task == "join"


def test_fields_of_a_10000_parent_glob_are_within_budget() -> None:
    parents = [f"p{i}" for i in range(10_000)]
    condition = compile_condition(
        'all(inputs["p*"].accuracy > 0.9) and count(state("p*") == "failed") == 0', parents
    )
    assert condition.max_steps <= MAX_CONDITION_STEPS
    views = {p: ParentView("completed", {"accuracy": 0.95, "log": "x" * 3000}) for p in parents}
    assert condition.evaluate(views) is True


def test_whole_output_comparisons_are_allowed_up_to_the_budget() -> None:
    fits = MAX_CONDITION_STEPS // (OUTPUT_SIZE + 1)
    compile_condition('all(inputs["p*"] == inputs.p0)', [f"p{i}" for i in range(fits)])
    with pytest.raises(ConditionBudgetError):
        compile_condition('all(inputs["p*"] == inputs.p0)', [f"p{i}" for i in range(fits + 1)])


def test_oversized_outputs_stop_at_the_budget() -> None:
    # Outputs larger than the inline limit (the bound assumes 4 KiB) cannot run away either.
    parents = [f"p{i}" for i in range(50)]
    condition = compile_condition('all(inputs["p*"] == inputs.p0)', parents)
    views = {p: ParentView("completed", [0] * 100_000) for p in parents}
    with pytest.raises(ConditionBudgetError, match="more than 200,000 steps"):
        condition.evaluate(views)
    # The budget counts steps, so the same evaluation with room for it completes.
    assert condition.evaluate(views, max_steps=50 * 100_002 + 100) is True


def test_budget_errors_are_condition_errors_with_the_fix() -> None:
    with pytest.raises(ConditionError, match="compare small fields"):
        compile_condition('any(inputs["p*"] == inputs.p0)', [f"p{i}" for i in range(1000)])


def test_matching_many_globs_against_many_parents_is_bounded() -> None:
    parents = [f"p{i}" for i in range(10_000)]
    globs = " or ".join(f'any(state("p{i}*") == "failed")' for i in range(1, 40))
    with pytest.raises(ConditionBudgetError, match="too many different globs"):
        compile_condition(globs, parents)
    # The same glob written many times is matched once.
    same = " or ".join(['any(state("p1*") == "failed")'] * 40)
    compile_condition(same, parents)


# -- the bound is a bound ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", "x" * 1500]),
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=40,
)
operands = st.sampled_from(
    [
        'inputs["p*"]',
        'inputs["p*"].a',
        'inputs["p*"][0]',
        "inputs.p0",
        "inputs.p1.a",
        "inputs.p1[-1]",
        'state("p*")',
        'state("p0")',
        '"a"',
        "1",
        '[1, "a", [null]]',
        "true",
    ]
)
comparisons = st.tuples(
    operands, st.sampled_from(["==", "!=", "<", ">=", "in", "not in"]), operands
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(comparisons, min_size=1, max_size=4),
    st.sampled_from(["all", "any", "count"]),
    st.lists(json_values, min_size=3, max_size=3),
)
def test_no_evaluation_of_small_outputs_exceeds_the_static_bound(
    parts: list[tuple[str, str, str]], aggregate: str, outputs: list[Any]
) -> None:
    outputs = [o for o in outputs if len(json.dumps(o)) <= INLINE_OUTPUT_BYTES]
    terms = []
    for a, op, b in parts:
        term = f"{a} {op} {b}"
        if "*" in term:
            term = f"{aggregate}({term})" + (" >= 0" if aggregate == "count" else "")
        terms.append(f"({term})")
    expr = " or ".join(terms)
    parents = ["p0", "p1", "p2"]
    try:
        condition = compile_condition(expr, parents)
    except ConditionError:
        return  # (a glob compared with a glob, say)
    views = {p: ParentView("completed", o) for p, o in zip(parents, outputs, strict=False)}
    views.update({p: ParentView("failed") for p in parents if p not in views})
    try:
        condition.evaluate(views, max_steps=condition.max_steps)
    except ConditionBudgetError:  # the failure this test looks for
        raise
    except ConditionError:
        pass  # a type mismatch or a missing field is an answer, within budget
