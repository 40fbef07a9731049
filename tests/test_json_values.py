"""The one parser of JSON text dagq did not write (shared/json_values.py): whatever a task, a
worker or a forged row hands it, the answer is a value dagq can store and answer, or a
ValueError that says what and where — never a value that breaks later."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter, ValidationError

from shared.json_values import MAX_JSON_DEPTH, FiniteJson, json_problem, parse_untrusted


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"name": "\\ud800"}', "$.name holds a lone surrogate"),
        ('{"\\udc00": 1}', "a key of $ holds a lone surrogate"),
        ('[1, "ok", ["\\ud83d"]]', "$[2][0] holds a lone surrogate"),
        ('{"x": NaN}', "NaN is not valid JSON"),
        ('{"x": -Infinity}', "-Infinity is not valid JSON"),
        ('{"x": 1e999}', "1e999 is out of range"),
        ("[" * 20_000, f"deeper than {MAX_JSON_DEPTH} levels"),
        ('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), "deeper than"),
        (b'{"a": "\xff"}', "not UTF-8"),
        ("{", "Expecting property name"),
    ],
    ids=[
        "surrogate", "surrogate-key", "surrogate-deep", "nan", "infinity", "1e999",
        "20000-brackets", "deep-objects", "not-utf8", "not-json",
    ],
)  # fmt: skip
def test_text_dagq_cannot_store_is_refused_with_what_and_where(
    text: str | bytes, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("$", r"\$")):
        parse_untrusted(text)


def test_what_dagq_can_store_is_read_as_json_reads_it() -> None:
    nested = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    for text in (
        '{"name": "\\ud83d\\ude00", "n": 10000000000000000000000, "x": -1.5e300}',
        '["[[[[{{{{", "\\"]]]]"]',  # brackets inside strings do not nest
        nested,
        "null",
    ):
        assert parse_untrusted(text) == json.loads(text)
    assert parse_untrusted(nested.encode()) == json.loads(nested)


def test_a_value_built_in_python_is_checked_the_same_way() -> None:
    deep: list[object] = []
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    assert json_problem({"ok": [1, "é", None]}) is None
    assert (
        json_problem({"a": ["\ud800"]})
        == "$.a[0] holds a lone surrogate: JSON text must be valid Unicode"
    )
    assert (
        json_problem(deep)
        == f"$[0]{'[0]' * (MAX_JSON_DEPTH - 1)} nests deeper than {MAX_JSON_DEPTH} levels"
    )
    with pytest.raises(ValidationError, match="lone surrogate"):
        TypeAdapter(FiniteJson).validate_python({"name": "\ud800"})
