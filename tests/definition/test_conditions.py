"""The condition language: each construct, the allowlist, and evaluation errors."""

from __future__ import annotations

import pytest

from shared.definition.conditions import ParentView, compile_condition
from shared.errors import ConditionError
from shared.limits import MAX_CONDITION_CHARS, MAX_CONDITION_DEPTH

PARENTS = ["prep", "train.seed=1", "train.seed=2", "train.seed=3", "check"]
VIEWS = {
    "prep": ParentView(
        "completed", {"rows": 120, "split": "val", "tags": ["a", "b"], "meta": {"ok": True}}
    ),
    "train.seed=1": ParentView("completed", {"accuracy": 0.91, "passed": True}),
    "train.seed=2": ParentView("failed", None),
    "train.seed=3": ParentView("completed", {"accuracy": 0.85, "passed": False}),
    "check": ParentView("skipped", None),
}


def ev(expr: str, views: dict[str, ParentView] | None = None) -> bool:
    return compile_condition(expr, PARENTS).evaluate(views if views is not None else VIEWS)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # comparisons
        ("inputs.prep.rows == 120", True),
        ("inputs.prep.rows != 120", False),
        ("inputs.prep.rows > 100", True),
        ("inputs.prep.rows >= 121", False),
        ("inputs.prep.rows < 200", True),
        ("inputs.prep.rows <= 119", False),
        ("100 < inputs.prep.rows < 200", True),
        ("inputs.prep.split == 'val'", True),
        ('inputs.prep.split < "w"', True),
        ("inputs.prep.split in ['train', 'val']", True),
        ("inputs.prep.split not in ['train', 'val']", False),
        ("'a' in inputs.prep.tags", True),
        ("'meta' in inputs.prep", True),
        ("'va' in inputs.prep.split", True),
        # boolean logic and literals
        ("inputs.prep.meta.ok and not false", True),
        ("inputs.prep.rows > 500 or inputs.prep.meta.ok", True),
        ("not (inputs.prep.rows > 5)", False),
        ("true", True),
        ("False", False),
        ("inputs.prep.missing == null or true", None),  # missing field errors before `or`
        # subscripts
        ('inputs["prep"]["rows"] == 120', True),
        ('inputs["train.seed=1"].accuracy > 0.9', True),
        ("inputs.prep.tags[0] == 'a'", True),
        ("inputs.prep.tags[-1] == 'b'", True),
        ("-inputs.prep.rows == -120", True),
        # JSON semantics: true is not 1
        ("inputs.prep.meta.ok == 1", False),
        ("[1, 2] == [1, 2]", True),
        # state
        ('state("train.seed=2") == "failed"', True),
        ('state("check") == "skipped"', True),
        ('state("prep") in ["completed", "skipped"]', True),
        # aggregates over globs: inputs[...] = completed members only; state(...) = all members
        ('count(inputs["train*"]) == 2', True),
        ('count(state("train*")) == 3', True),
        ('count(state("train*") == "failed") == 1', True),
        ('any(inputs["train*"].accuracy > 0.9)', True),
        ('all(inputs["train*"].accuracy > 0.9)', False),
        ('all(inputs["train*"].accuracy > 0.8)', True),
        ('count(inputs["train*"].passed) == 1', True),
        ('count(inputs["train*"].accuracy > 0.8) >= 2', True),
        ('0.9 < inputs["train*"].accuracy', None),  # a bare glob result must be reduced
        ('"failed" in state("train*")', True),
        ('any(state("train.seed=?") == "completed")', True),
        ('all(inputs["nothing-completed*"].x > 1)', None),  # glob matching no parent
        ("any(inputs.prep.tags == 'a')", None),  # a list is one value: not elementwise
        ("any([true, false])", True),
        ("all([])", True),
    ],
)
def test_constructs(expr: str, expected: bool | None) -> None:
    if expected is None:
        with pytest.raises(ConditionError):
            ev(expr)
    else:
        assert ev(expr) is expected


def test_multi_line_condition_from_a_yaml_block_scalar() -> None:
    assert ev("inputs.prep.rows > 100\nand inputs.prep.split == 'val'\n") is True


def test_glob_over_members_with_no_completed_parent_is_empty() -> None:
    views = {**VIEWS, "train.seed=1": ParentView("failed"), "train.seed=3": ParentView("cancelled")}
    assert ev('count(inputs["train*"]) == 0', views) is True
    assert ev('any(inputs["train*"].accuracy > 0)', views) is False
    assert ev('all(inputs["train*"].accuracy > 0)', views) is True


def test_compiled_condition_is_reusable_and_records_what_it_reads() -> None:
    cond = compile_condition('inputs.prep.rows > 10 and any(inputs["train*"].passed)', PARENTS)
    assert cond.source == 'inputs.prep.rows > 10 and any(inputs["train*"].passed)'
    assert cond.parents == ("prep", "train.seed=1", "train.seed=2", "train.seed=3")
    assert cond.evaluate(VIEWS) is True
    small = {**VIEWS, "prep": ParentView("completed", {"rows": 1})}
    assert cond.evaluate(small) is False
    assert cond.evaluate(VIEWS) is True


# -- the allowlist: rejected when compiled ---------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "contains"),
    [
        ("inputs.prep.__class__", "field '__class__' is not allowed"),
        ("inputs.prep._private", "names starting with '_' are reserved"),
        ("().__class__.__bases__[0].__subclasses__()", "is not allowed"),
        ("__import__('os').system('id')", "is not allowed: the only functions are all(...)"),
        ("open('/etc/passwd')", "call 'open' is not allowed"),
        ("inputs.prep.rows.bit_length()", "is not allowed"),
        ("len(inputs.prep.tags) > 1", "call 'len' is not allowed"),
        ("(lambda: 1)() == 1", "is not allowed"),
        ("[x for x in inputs.prep.tags] == []", "list comprehensions are not allowed"),
        ("any(x > 1 for x in [1])", "generator expressions are not allowed"),
        ("inputs.prep.rows + 1 > 2", "arithmetic"),
        ("inputs.extract-a.rows > 2", 'for a task name with "-", write inputs["extract-a"]'),
        ("1 if true else 2", "'x if c else y' expressions are not allowed"),
        ("{'a': 1} == {}", "mapping literals are not allowed"),
        ("f'{inputs.prep}' == ''", "f-strings are not allowed"),
        ("(y := 1) == 1", "':=' assignments are not allowed"),
        ("inputs.prep.tags[0:1] == []", "must be a quoted string or an integer"),
        ("inputs.prep is None", "operator 'is' is not allowed"),
        ("b'x' == b'x'", "literal b'x' is not allowed"),
        ("somevar == 1", "unknown name 'somevar'"),
        ("inputs == 1", "name a parent after inputs"),
        ("any == 1", "any is a function"),
        ("inputs.other.x == 1", "reads 'other', which is not a dependency"),
        ('inputs["other"] == 1', "reads 'other', which is not a dependency"),
        ('state("other") == "failed"', "reads 'other'"),
        ('state(inputs.prep.x) == "failed"', "state(...) takes a quoted parent name"),
        ('count(inputs["zzz*"]) > 0', "the glob 'zzz*' matches none"),
        ("all(inputs.prep.tags, 1)", "all(...) takes exactly one argument"),
        ("any(x=1)", "takes exactly one argument"),
        ("inputs[0] == 1", "name a parent with a string"),
        ('inputs["train*"].accuracy > 0.9', "reduce it with all(...), any(...) or count(...)"),
        ('inputs["train*"].accuracy > 0.9 and true', "cannot be used as an operand of and"),
        ('inputs["train*"].x == inputs["train*"].y', "compare a glob with a single value"),
        ('0 < inputs["train*"].x < 1', "chained comparison"),
        ("inputs.prep.rows >", "syntax error"),
        ("", "non-empty"),
        ("x = 1", "syntax error"),
        ("import os", "syntax error"),
    ],
)
def test_rejected_at_compile_time(expr: str, contains: str) -> None:
    with pytest.raises(ConditionError) as info:
        compile_condition(expr, PARENTS)
    assert contains in str(info.value), str(info.value)


def test_length_limit() -> None:
    expr = " or ".join(["true"] * (MAX_CONDITION_CHARS // 8 + 1))
    assert len(expr) > MAX_CONDITION_CHARS
    with pytest.raises(ConditionError, match=f"the limit is {MAX_CONDITION_CHARS}"):
        compile_condition(expr, PARENTS)


def test_depth_limit() -> None:
    expr = "not " * (MAX_CONDITION_DEPTH + 1) + "true"
    with pytest.raises(ConditionError, match="nested too deeply"):
        compile_condition(expr, PARENTS)
    assert compile_condition("not " * 10 + "true", PARENTS).evaluate(VIEWS) is True


# -- evaluation errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "contains"),
    [
        (
            "inputs.prep.accuracy > 1",
            "inputs.prep.accuracy: inputs.prep has no field 'accuracy'"
            " (fields: meta, rows, split, tags)",
        ),
        (
            'inputs["train.seed=2"].accuracy > 1',
            "parent 'train.seed=2' has no output (it is failed)",
        ),
        ("inputs.check == null", "parent 'check' has no output (it is skipped)"),
        ("inputs.prep.rows.x == 1", "cannot read field 'x' of 120"),
        ("inputs.prep.tags[5] == 'a'", "index 5 is out of range (2 items)"),
        ("inputs.prep.split[0] == 'v'", "cannot index 'val'"),
        ("inputs.prep.split > 3", "cannot compare inputs.prep.split ('val') > 3 (3)"),
        ("inputs.prep.rows", "condition must be true or false, but it evaluated to 120"),
        ("inputs.prep.rows and true", "and needs true or false, but inputs.prep.rows is 120"),
        ("not inputs.prep.split", "not needs true or false"),
        ("-inputs.prep.split == 1", "expected a number"),
        ("1 in 2", "the right side must be a list, a string or an object"),
        ('all(inputs["train*"].accuracy)', "all(...) needs true or false"),
        ("any(inputs.prep.rows)", "expected a glob such as"),
    ],
)
def test_evaluation_errors(expr: str, contains: str) -> None:
    with pytest.raises(ConditionError) as info:
        ev(expr)
    assert contains in str(info.value), str(info.value)


def test_missing_parent_view_is_an_error_not_a_crash() -> None:
    cond = compile_condition("inputs.prep.rows > 1", PARENTS)
    with pytest.raises(ConditionError, match="no state was given for parent 'prep'"):
        cond.evaluate({})


def test_outputs_are_only_read_as_json_never_as_python_objects() -> None:
    class Sneaky(dict[str, object]):
        @property
        def rows(self) -> int:  # pragma: no cover - must never be called
            raise AssertionError("attribute access reached Python")

    views = {**VIEWS, "prep": ParentView("completed", Sneaky(rows=3))}
    assert ev("inputs.prep.rows == 3", views) is True
