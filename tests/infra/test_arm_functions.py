"""The tests' Bicep evaluator computes what Azure Resource Manager computes: one test per function,
with the examples of Microsoft's reference (tests/infra/arm_functions.py cites each page), each
written as Bicep and evaluated through pycep, so the parser's name for the function is checked too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra.arm_functions import FUNCTIONS, ArmError
from tests.infra.bicep_model import evaluate_expression


def arm(expression: str, **env: Any) -> Any:
    return evaluate_expression(expression, env)


def test_string_formats_booleans_as_arm_does_not_as_bicep_literals() -> None:
    # The GPU driver bug: string(true) is 'True', so a shell test against "true" never matches.
    assert arm("string(flag)", flag=True) == "True"
    assert arm("string(flag)", flag=False) == "False"
    assert arm("string(5)") == "5"
    assert arm("string(items)", items=["a", "b", "c"]) == '["a","b","c"]'
    assert arm("string(o)", o={"valueA": 10, "valueB": "Example Text"}) == (
        '{"valueA":10,"valueB":"Example Text"}'
    )
    assert arm("string('text')") == "text"


def test_interpolation_formats_values_like_string() -> None:
    assert arm("'driver=${flag}'", flag=True) == "driver=True"
    assert arm("'n=${n} q=${q}'", n=3, q=["gpu"]) == 'n=3 q=["gpu"]'


def test_escapes_in_interpolated_strings_are_decoded() -> None:
    assert arm("'it\\'s ${n}\\n'", n=1) == "it's 1\n"


def test_a_conditional_gives_the_lowercase_text_a_shell_compares() -> None:
    assert arm("flag ? 'true' : 'false'", flag=True) == "true"
    assert arm("flag ? 'true' : 'false'", flag=False) == "false"


def test_to_lower_and_to_upper() -> None:
    assert arm("toLower('One Two')") == "one two"
    assert arm("toUpper('One Two')") == "ONE TWO"
    with pytest.raises(ArmError):
        arm("toLower(n)", n=1)


def test_replace_replaces_every_occurrence() -> None:
    assert arm("replace('123-123-1234', '-', '')") == "1231231234"
    with pytest.raises(ArmError):
        arm("replace('a', 'a', flag)", flag=True)  # ARM wants a string, not a bool


def test_join_takes_strings_only() -> None:
    assert arm("join(items, ',')", items=["one", "two", "three"]) == "one,two,three"
    with pytest.raises(ArmError):
        arm("join(items, ',')", items=[1, 2])


def test_trim_removes_surrounding_white_space() -> None:
    assert arm("trim(t)", t="    one two three   \n") == "one two three"


def test_empty_of_arrays_objects_strings_and_null() -> None:
    assert arm("empty(x)", x=[]) is True
    assert arm("empty(x)", x={}) is True
    assert arm("empty('')") is True
    assert arm("empty(x)", x=None) is True
    assert arm("empty('a')") is False
    assert arm("empty(x)", x=[1]) is False


def test_length_counts_elements_characters_and_root_properties() -> None:
    assert arm("length(x)", x=["a", "b", "c"]) == 3
    assert arm("length('One Two Three')") == 13
    assert arm("length(x)", x={"a": 1, "b": {"c": 2, "d": 3}}) == 2


def test_concat_of_arrays_or_of_strings() -> None:
    assert arm("concat(a, b)", a=["1-1", "1-2"], b=["2-1"]) == ["1-1", "1-2", "2-1"]
    assert arm("concat('prefix', '-', 'x')") == "prefix-x"
    with pytest.raises(ArmError):
        arm("concat(a, 'x')", a=["1"])


def test_range_counts_from_start_and_refuses_a_negative_count() -> None:
    assert arm("range(5, 3)") == [5, 6, 7]
    assert arm("range(1, 0)") == []  # one partition: no extra partition queues
    with pytest.raises(ArmError):
        arm("range(1, n)", n=-1)


def test_intersection_keeps_the_first_arguments_order() -> None:
    assert arm("intersection(a, b)", a=["one", "two", "three"], b=["three", "two"]) == [
        "two",
        "three",
    ]
    assert arm("intersection(a, b)", a={"one": "a", "two": "b"}, b={"one": "a", "two": "z"}) == {
        "one": "a"
    }


def test_union_last_key_wins_and_nested_objects_merge() -> None:
    assert arm("union(a, b)", a=["one", "two"], b=["two", "three"]) == ["one", "two", "three"]
    merged = arm(
        "union(a, b)",
        a={"one": "a", "nested": {"x": 1, "y": 2}},
        b={"one": "b", "nested": {"y": 3}},
    )
    assert merged == {"one": "b", "nested": {"x": 1, "y": 3}}


def test_json_parses_text() -> None:
    assert arm("json('-1')") == -1
    assert arm("json('null')") is None
    assert arm("json(t)", t='{"a": [true]}') == {"a": [True]}


def test_base64_of_utf8() -> None:
    assert arm("base64('one, two, three')") == "b25lLCB0d28sIHRocmVl"


def test_bool_accepts_any_casing() -> None:
    assert arm("bool('TRUE')") is True
    assert arm("bool('False')") is False
    assert arm("bool(1)") is True


def test_int_from_text() -> None:
    assert arm("int('4')") == 4
    assert arm("int(n)", n=7) == 7


def test_contains_in_strings_arrays_and_objects() -> None:
    assert arm("contains('OneTwoThree', 'e')") is True
    assert arm("contains('OneTwoThree', 'z')") is False
    assert arm("contains(a, 'gpu')", a=["cpu", "gpu"]) is True
    assert arm("contains(o, 'gpu')", o={"gpu": 1}) is True


def test_subscription_resource_id_shape() -> None:
    role = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
    assert arm(f"subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '{role}')") == (
        f"/subscriptions/{{subscriptionId}}/providers/Microsoft.Authorization/roleDefinitions/{role}"
    )


def test_every_function_has_a_test_here() -> None:
    source = Path(__file__).read_text()
    untested = [
        name
        for name in FUNCTIONS
        if f"def test_{name}" not in source and f"{_bicep_name(name)}(" not in source
    ]
    assert not untested


def _bicep_name(pycep_name: str) -> str:
    head, *rest = pycep_name.split("_")
    return head + "".join(part.title() for part in rest)
