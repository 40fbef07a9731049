"""ARM template functions as Azure Resource Manager evaluates them, for the tests' Bicep evaluator.

Bicep compiles to an ARM template and ARM evaluates every function at deployment time, so a value
the tests compute must be the value Azure computes, not the one Python would: ``string(true)`` is
``'True'`` in ARM (it formats booleans like .NET), never ``'true'``. Each function below cites the
page of Microsoft's reference it follows ("Bicep functions", learn.microsoft.com/azure/
azure-resource-manager/bicep/bicep-functions-*); tests/infra/test_arm_functions.py has a test per
function with the documented examples.

A call ARM would reject (a wrong argument type, a negative ``range`` count) raises
:class:`ArmError`, as the deployment would fail. Functions are keyed by pycep's name for them
(``to_lower`` for ``toLower``).
"""

from __future__ import annotations

import base64 as _base64
import json as _json
from collections.abc import Callable, Mapping
from typing import Any

DOCS = "https://learn.microsoft.com/azure/azure-resource-manager/bicep/"


class ArmError(ValueError):
    """A call that Azure Resource Manager would refuse at deployment time."""


def _need(value: Any, kind: type | tuple[type, ...], function: str) -> Any:
    # bool is an int in Python, never in ARM: an int parameter must not accept a bool.
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ArmError(f"{function}(): a bool is not a {kind}")
    if not isinstance(value, kind):
        raise ArmError(f"{function}(): {value!r} is not a {kind}")
    return value


def arm_text(value: Any) -> str:
    """A value as ARM turns it into text: ``string(value)`` and ``'${value}'`` interpolation.

    ``string()`` (bicep-functions-string#string): "Converts the specified value to a string";
    the documented outputs are ``'5'`` for 5, ``'{"valueA":10,"valueB":"Example Text"}'`` for an
    object and ``'["a","b","c"]'`` for an array (compact JSON). Booleans become ``'True'`` and
    ``'False'``: ARM formats them as .NET does (PSRule.Rules.Azure issue #793 records the
    difference). Interpolation compiles to ``format('{0}', value)``
    (bicep-functions-string#format), which formats its arguments the same way.
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | dict):
        return _json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if value is None:
        return ""
    raise ArmError(f"string(): cannot convert {value!r}")


def to_lower(text: Any) -> str:
    """bicep-functions-string#tolower: "Converts the specified string to lower case"."""
    return str(_need(text, str, "toLower")).lower()


def to_upper(text: Any) -> str:
    """bicep-functions-string#toupper: "Converts the specified string to upper case"."""
    return str(_need(text, str, "toUpper")).upper()


def replace(original: Any, old: Any, new: Any) -> str:
    """bicep-functions-string#replace: every occurrence of ``old`` in ``original``, all strings."""
    for value in (original, old, new):
        _need(value, str, "replace")
    return str(original).replace(old, new)


def join(items: Any, delimiter: Any) -> str:
    """bicep-functions-array#join: "an array of strings" joined with a string delimiter."""
    _need(delimiter, str, "join")
    return str(delimiter).join(_need(item, str, "join") for item in _need(items, list, "join"))


def trim(text: Any) -> str:
    """bicep-functions-string#trim: "Removes all leading and trailing white-space characters"."""
    return str(_need(text, str, "trim")).strip()


def empty(item: Any) -> bool:
    """bicep-functions-array#empty: whether an array, object or string is empty (null: true)."""
    if item is None:
        return True
    return len(_need(item, (str, list, dict), "empty")) == 0


def length(item: Any) -> int:
    """bicep-functions-array#length: the elements of an array, the characters of a string, or
    "the number of root-level properties" of an object."""
    return len(_need(item, (str, list, dict), "length"))


def concat(*args: Any) -> Any:
    """bicep-functions-array#concat (arrays) and bicep-functions-string#concat (strings): all
    arrays, or all strings; ARM refuses a mix."""
    if args and all(isinstance(arg, list) for arg in args):
        return [item for arg in args for item in arg]
    return "".join(_need(arg, str, "concat") for arg in args)


def range_(start: Any, count: Any) -> list[int]:
    """bicep-functions-array#range: ``count`` integers from ``start``; "count must be a
    non-negative integer" and start + count may not exceed 2147483647."""
    _need(start, int, "range")
    _need(count, int, "range")
    if count < 0 or start + count > 2147483647:
        raise ArmError(f"range({start}, {count}): count must be >= 0 and start + count <= 2^31-1")
    return list(range(start, start + count))


def intersection(first: Any, *others: Any) -> Any:
    """bicep-functions-array#intersection: the elements (or properties: same key and value) that
    every argument has, in the first argument's order, without duplicates."""
    if isinstance(first, dict):
        return {
            key: value
            for key, value in first.items()
            if all(_need(o, dict, "intersection").get(key, _MISSING) == value for o in others)
        }
    found: list[Any] = []
    for item in _need(first, list, "intersection"):
        if item not in found and all(item in _need(o, list, "intersection") for o in others):
            found.append(item)
    return found


_MISSING = object()


def union(*args: Any) -> Any:
    """bicep-functions-object#union: arrays -> every element once, in order; objects -> all
    properties, "if there are duplicate keys, the last one wins", and nested objects are merged
    recursively ("The union function merges not only the top-level elements but also recursively
    merges any nested objects within them")."""
    if all(isinstance(arg, list) for arg in args):
        merged_list: list[Any] = []
        for arg in args:
            merged_list.extend(item for item in arg if item not in merged_list)
        return merged_list
    merged: dict[str, Any] = {}
    for arg in args:
        for key, value in _need(arg, dict, "union").items():
            old = merged.get(key)
            merged[key] = (
                union(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
            )
    return merged


def json_(text: Any) -> Any:
    """bicep-functions-object#json: the JSON value a string holds ('null' -> null)."""
    return _json.loads(_need(text, str, "json"))


def base64(text: Any) -> str:
    """bicep-functions-string#base64: the base64 of a string's UTF-8 bytes."""
    return _base64.b64encode(_need(text, str, "base64").encode()).decode()


def bool_(value: Any) -> bool:
    """bicep-functions-logical#bool: a bool as is; the strings 'true'/'false' in any casing."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if isinstance(value, int):
        return value != 0
    raise ArmError(f"bool(): cannot convert {value!r}")


def int_(value: Any) -> int:
    """bicep-functions-numeric#int: an integer from an integer or a string of digits."""
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return int(_need(value, int, "int"))


def contains(container: Any, item: Any) -> bool:
    """bicep-functions-array#contains: a substring of a string (case-sensitive), an element of an
    array, or a key of an object."""
    if isinstance(container, str):
        return _need(item, str, "contains") in container
    return item in _need(container, (list, dict), "contains")


def subscription_resource_id(*args: Any) -> str:
    """bicep-functions-resource#subscriptionresourceid: ``/subscriptions/{id}/providers/{type}/
    {name}``; without a subscription id argument the deployment's subscription, which only Azure
    knows (``{subscriptionId}`` here)."""
    for arg in args:
        _need(arg, str, "subscriptionResourceId")
    resource_type = next(i for i, arg in enumerate(args) if "/" in arg)
    subscription = args[0] if resource_type == 1 else "{subscriptionId}"
    kind, names = args[resource_type], args[resource_type + 1 :]
    parts = kind.split("/")
    segments = [parts[0]] + [f"{t}/{n}" for t, n in zip(parts[1:], names, strict=True)]
    return f"/subscriptions/{subscription}/providers/" + "/".join(segments)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "string": arm_text,
    "to_lower": to_lower,
    "to_upper": to_upper,
    "replace": replace,
    "join": join,
    "trim": trim,
    "empty": empty,
    "length": length,
    "concat": concat,
    "range": range_,
    "intersection": intersection,
    "union": union,
    "json": json_,
    "base64": base64,
    "bool": bool_,
    "int": int_,
    "contains": contains,
    "subscription_resource_id": subscription_resource_id,
}
"""Every function the evaluator computes; any other evaluates to an Opaque value."""
