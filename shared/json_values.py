"""JSON values dagq accepts from outside: finite numbers only.

Python's ``json`` and pydantic's JSON parser both accept ``NaN``, ``Infinity`` and ``-Infinity``
(and turn ``1e999`` into infinity), none of which is JSON: stored inline and answered by the API,
such a value makes a body no client can parse (``{"inline":NaN}``), and conditions compare them
in surprising ways. Every output, inline (``shared.messages.OutputRef``) or read back from a blob
(the coordinator's ``foreach_from`` lists, the worker's ``$DAGQ_OUTPUT``), is checked here.

``parse_untrusted`` is the one way to parse JSON text dagq did not write (a task's output or
progress, a registry or index row, a blob a worker uploaded): besides NaN and infinities it refuses
nesting deeper than ``MAX_JSON_DEPTH`` before parsing (20,000 ``[`` would exhaust the parser's
recursion, or a serializer's later) and strings with a lone surrogate (``"\\ud800"`` parses into a
``str`` that no UTF-8 encoder takes, so storing or answering it fails later, far from the input).
Every failure is a ``ValueError`` that says what and where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, JsonValue

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects dagq accepts in JSON it did not write."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
"""A string (skipped: brackets inside it do not nest) or a bracket."""


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_problem(value: object, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """What in ``value`` is not JSON dagq can store and answer, and where (``$``, ``$[3].x``...):
    a non-finite number, a string or key with a lone surrogate, nesting deeper than ``max_depth``;
    None when there is nothing. Iterative: a deeply nested value costs no recursion."""
    stack: list[tuple[object, str, int]] = [(value, "$", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{where} is {item!r}: JSON numbers must be finite (no NaN or Infinity)"
        if isinstance(item, str) and _unencodable(item):
            return f"{where} holds a lone surrogate: JSON text must be valid Unicode"
        if isinstance(item, dict | list) and depth >= max_depth:
            return f"{where} nests deeper than {max_depth} levels"
        if isinstance(item, dict):
            for k, v in item.items():
                key = str(k)
                if _unencodable(key):
                    return f"a key of {where} holds a lone surrogate: JSON must be valid Unicode"
                stack.append((v, f"{where}.{key}", depth + 1))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
    return None


non_finite_problem = json_problem
"""The name this check had when it only looked at numbers."""


def _finite(value: JsonValue) -> JsonValue:
    problem = json_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


FiniteJson = Annotated[JsonValue, AfterValidator(_finite)]
"""A JSON value whose numbers are all finite, whose strings are valid Unicode, nested at most
``MAX_JSON_DEPTH`` deep."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is out of range: JSON numbers must be finite")
    return number


def loads_finite(data: str | bytes) -> Any:
    """``json.loads`` that refuses NaN, Infinity and numbers out of the float range (ValueError)."""
    return json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)


def nesting_problem(text: str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Whether the JSON ``text`` nests arrays and objects deeper than ``max_depth``, found
    without parsing it (a parser would recurse once per level)."""
    depth = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                return f"it nests deeper than {max_depth} levels (at character {token.start()})"
        elif bracket in "]}":
            depth -= 1
    return None


def parse_untrusted(data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The value of JSON text dagq did not write; ValueError (saying what and where) when it is
    not UTF-8, not JSON, nests deeper than ``max_depth``, or holds NaN, an infinity, a number
    out of the float range or a lone surrogate."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    problem = nesting_problem(text, max_depth)
    if problem is not None:
        raise ValueError(problem)
    try:
        value = loads_finite(text)
    except RecursionError:  # defensive: the scan above bounds the depth
        raise ValueError(f"it nests deeper than {max_depth} levels") from None
    problem = json_problem(value, max_depth)
    if problem is not None:
        raise ValueError(problem)
    return value
