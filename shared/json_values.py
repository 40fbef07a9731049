"""JSON values dagq accepts from outside: finite numbers only.

Python's ``json`` and pydantic's JSON parser both accept ``NaN``, ``Infinity`` and ``-Infinity``
(and turn ``1e999`` into infinity), none of which is JSON: stored inline and answered by the API,
such a value makes a body no client can parse (``{"inline":NaN}``), and conditions compare them
in surprising ways. Every output, inline (``shared.messages.OutputRef``) or read back from a blob
(the coordinator's ``foreach_from`` lists, the worker's ``$DAGQ_OUTPUT``), is checked here.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, JsonValue


def non_finite_problem(value: object) -> str | None:
    """Where in ``value`` a non-finite number sits (``$``, ``$[3].x``...), or None. Iterative:
    a deeply nested value costs no recursion."""
    stack: list[tuple[object, str]] = [(value, "$")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{where} is {item!r}: JSON numbers must be finite (no NaN or Infinity)"
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


def _finite(value: JsonValue) -> JsonValue:
    problem = non_finite_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


FiniteJson = Annotated[JsonValue, AfterValidator(_finite)]
"""A JSON value whose numbers are all finite."""


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
