"""What a condition does with JSON values at run time, each operation paid from a step budget.

Evaluation cost is counted, not timed, so the bound is deterministic: one **step** is one value
read (a parent's output or state, a field, a glob member), one JSON node compared, one list item
tested, or one KiB of string compared (strings compare in C). An ``Evaluation`` holds the steps
left and raises ``ConditionBudgetError`` when they run out.
``shared.definition.conditions.compile`` bounds
the same costs statically, before a condition ever runs (``size`` below is that bound's unit).
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from shared.errors import ConditionBudgetError, ConditionError

STRING_STEP_CHARS = 1024
"""Characters of string compared per step."""
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxlong = 3, 8, 6, 64, 64


@dataclass(frozen=True)
class ParentView:
    """What a condition sees of one parent: its state (a TaskState value) and its output."""

    state: str
    output: JsonValue = None


Inputs = Mapping[str, ParentView]


class Evaluation:
    """One evaluation of a condition: the parents' views and the steps it may still take."""

    __slots__ = ("inputs", "left", "limit")

    def __init__(self, inputs: Inputs, limit: int) -> None:
        self.inputs = inputs
        self.limit = limit
        self.left = limit

    def spend(self, steps: int) -> None:
        """Pay ``steps``; raise ConditionBudgetError when the budget is spent."""
        self.left -= steps
        if self.left < 0:
            raise ConditionBudgetError(
                f"the condition needs more than {self.limit:,} steps to evaluate (the limit"
                " per evaluation): it compares too much parent output; compare small fields"
                ' (inputs["train*"].accuracy) rather than whole outputs, or match fewer parents'
            )

    def view(self, parent: str) -> ParentView:
        self.spend(1)
        try:
            return self.inputs[parent]
        except KeyError:
            raise ConditionError(f"no state was given for parent {parent!r}") from None


class Many(tuple[Any, ...]):
    """The values of a glob's members (kept apart from a JSON list, which is one value)."""

    __slots__ = ()


def get(ev: Evaluation, value: Any, key: str | int, text: str, base_text: str) -> Any:
    """``value[key]`` of a JSON object or list, or a ConditionError saying why not."""
    ev.spend(1)
    if isinstance(key, str):
        if isinstance(value, dict):
            if key in value:
                return value[key]
            fields = list_names(sorted(str(k) for k in value))
            raise ConditionError(f"{text}: {base_text} has no field {key!r} (fields: {fields})")
        raise ConditionError(
            f"{text}: cannot read field {key!r} of {show(value)} ({base_text} is not an object)"
        )
    if isinstance(value, list):
        if -len(value) <= key < len(value):
            return value[key]
        raise ConditionError(f"{text}: index {key} is out of range ({len(value)} items)")
    raise ConditionError(f"{text}: cannot index {show(value)} ({base_text} is not a list)")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_bool(value: Any, text: str, word: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConditionError(f"{word} needs true or false, but {text} is {show(value)}")


def equal(ev: Evaluation, a: Any, b: Any) -> bool:
    """JSON equality (``true`` is not ``1``), one step per node compared."""
    ev.spend(1)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(ev, x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(ev, a[k], b[k]) for k in a)
    if isinstance(a, str) and isinstance(b, str):
        ev.spend(min(len(a), len(b)) // STRING_STEP_CHARS)
    return bool(a == b)


Comparison = Callable[[Evaluation, Any, Any, str, str], bool]


def _order(symbol: str, test: Callable[[Any, Any], bool]) -> Comparison:
    def compare(ev: Evaluation, a: Any, b: Any, ta: str, tb: str) -> bool:
        ev.spend(1)
        if is_number(a) and is_number(b):
            return test(a, b)
        if isinstance(a, str) and isinstance(b, str):
            ev.spend(min(len(a), len(b)) // STRING_STEP_CHARS)
            return test(a, b)
        raise ConditionError(
            f"cannot compare {ta} ({show(a)}) {symbol} {tb} ({show(b)}): both sides must be"
            " numbers or both strings"
        )

    return compare


def contains(ev: Evaluation, a: Any, b: Any, ta: str, tb: str) -> bool:
    """``a in b``: an item of a list, a substring of a string, or a key of an object."""
    ev.spend(1)
    if isinstance(b, list):
        return any(equal(ev, a, item) for item in b)
    if isinstance(b, str) and isinstance(a, str):
        ev.spend((len(a) + len(b)) // STRING_STEP_CHARS)
        return a in b
    if isinstance(b, dict) and isinstance(a, str):
        return a in b
    raise ConditionError(
        f"{ta} in {tb}: the right side must be a list, a string or an object, got {show(b)}"
    )


COMPARISONS: dict[str, Comparison] = {
    "Eq": lambda ev, a, b, _ta, _tb: equal(ev, a, b),
    "NotEq": lambda ev, a, b, _ta, _tb: not equal(ev, a, b),
    "Lt": _order("<", lambda a, b: a < b),
    "LtE": _order("<=", lambda a, b: a <= b),
    "Gt": _order(">", lambda a, b: a > b),
    "GtE": _order(">=", lambda a, b: a >= b),
    "In": contains,
    "NotIn": lambda ev, a, b, ta, tb: not contains(ev, a, b, ta, tb),
}
"""Comparison operators by the name of their ``ast`` node type."""


def _all(ev: Evaluation, values: Sequence[Any], text: str) -> bool:
    ev.spend(len(values))
    return all(as_bool(v, f"a member of {text}", "all(...)") for v in values)


def _any(ev: Evaluation, values: Sequence[Any], text: str) -> bool:
    ev.spend(len(values))
    return any(as_bool(v, f"a member of {text}", "any(...)") for v in values)


def _count(ev: Evaluation, values: Sequence[Any], _text: str) -> int:
    ev.spend(len(values))
    return sum(1 for v in values if v is not False)


AGGREGATES: dict[str, Callable[[Evaluation, Sequence[Any], str], Any]] = {
    "all": _all,
    "any": _any,
    "count": _count,
}


def show(value: Any) -> str:
    """A value as an error message shows it (JSON spelling, at most 60 characters)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Many):
        return f"{len(value)} glob members"
    text = _SHOW.repr(value)  # (reprlib: a huge output is not rendered whole only to be cut)
    return text if len(text) <= 60 else text[:57] + "..."


def list_names(names: Sequence[str], limit: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names)} in all)"
