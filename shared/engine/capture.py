"""Capturing the list of a dynamic fan-out (``foreach_from``) when its source parent completes.

The list at ``inputs.<parent>.<path>`` of the completion's output is validated (a list of at most
the task's max width; each item a scalar, or a flat object of scalars, of at most MAX_ITEM_CHARS as
JSON) and kept in ``RuntimeState.lists``, or the reason it cannot be expanded (the task fails with
it when it is due: ``shared.engine.expansion``). A later completion of the source (a rerun) replaces
the capture until the task has expanded.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from shared.definition.spec import type_word
from shared.definition.workflow import CompiledWorkflow, ExpandFrom
from shared.engine.item_list import ItemList
from shared.limits import MAX_ITEM_CHARS, MAX_LIST_BYTES

if TYPE_CHECKING:
    from shared.engine.step import Step


def list_sources(wf: CompiledWorkflow) -> frozenset[str]:
    """Names of the tasks whose output feeds a ``foreach_from``."""
    return frozenset(wf.tasks[source].name for source in wf.list_sources)


def items_of(value: Any, spec: ExpandFrom, source: str) -> ItemList | str:
    """The items at ``spec.path`` in ``value`` (the source's output), or why there are none."""
    where = f"inputs.{source}{spec.spelled}"
    at: Any = value
    for depth, key in enumerate(spec.path):
        if isinstance(at, dict) and key in at:
            at = at[key]
        elif isinstance(at, list) and key.isascii() and key.isdigit() and int(key) < len(at):
            at = at[int(key)]
        else:
            reached = f"inputs.{source}" + "".join(f".{k}" for k in spec.path[:depth])
            return f"{where}: {reached} is {type_word(at)} without {key!r}{_what_exists(at)}"
    if not isinstance(at, list):
        return f"{where} is {type_word(at)}, not a list"
    if len(at) > spec.max_width:
        return (
            f"{where} has {len(at):,} items; a foreach_from expands to at most"
            f" {spec.max_width:,} tasks (max expansion width)"
        )
    for i, item in enumerate(at):
        problem = _item_problem(item)
        if problem:
            return f"{where}[{i}] {problem}"
    return ItemList(0, tuple(at))


KEYS_SHOWN = 10
"""Most keys of an output that an error about a missing key lists."""


def _what_exists(at: Any) -> str:
    """``; its keys: 'a', 'b'`` (the first few, each cut short: they are a task's output), or
    the indexes of a list, so the error says what to write instead."""
    if isinstance(at, dict) and at:
        keys = [repr(str(k)[:40]) for k in list(at)[:KEYS_SHOWN]]
        more = f" and {len(at) - KEYS_SHOWN} more" if len(at) > KEYS_SHOWN else ""
        return f"; its keys: {', '.join(keys)}{more}"
    if isinstance(at, list) and at:
        return f"; its indexes: 0-{len(at) - 1}"
    return ""


def _is_scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool)


def _item_problem(item: Any) -> str | None:
    if isinstance(item, dict):
        for key, value in item.items():
            if not (isinstance(key, str) and key.isidentifier() and key.isascii()):
                return f"has key {key!r}: keys must be letters, digits and '_'"
            if not _is_scalar(value):
                return (
                    f"has {type_word(value)} at {key!r}: items are strings, numbers, booleans"
                    " or flat objects of those"
                )
    elif not _is_scalar(item):
        return (
            f"is {type_word(item)}: items are strings, numbers, booleans or flat objects of those"
        )
    text = str(item)
    if len(text) > MAX_ITEM_CHARS:
        return f"is longer than {MAX_ITEM_CHARS} characters"
    if "\x00" in text:  # (repr of a dict shows it escaped: no NUL reaches the check then)
        return "holds a NUL character"
    if isinstance(item, dict) and any("\x00" in str(v) for v in item.values()):
        return "holds a NUL character"
    return None


UNREAD = object()
"""The output value of a completion whose list-feeding blob output the coordinator could not
read (missing, larger than MAX_LIST_BYTES, or not JSON)."""


def capture(step: Step, source: int, value: Any) -> None:
    """``source`` completed with output ``value`` (or UNREAD): keep the list of each
    ``foreach_from`` task that expands over it (and has not expanded yet)."""
    wf, st = step.wf, step.st
    if source not in wf.list_sources:
        return
    expanded_groups = {group for group, _ in st.expansions}
    for child in wf.children[source]:
        spec = wf.tasks[child].expand
        if spec is None or spec.source != source or child in expanded_groups:
            continue
        name = wf.tasks[source].name
        if value is UNREAD:
            found: ItemList | str = (
                f"the output of {name} is stored as a blob that could not be read"
                f" (at most {MAX_LIST_BYTES // 2**20} MiB of JSON)"
            )
        else:
            found = items_of(value, spec, name)
        attempt = st.attempt[source]
        if isinstance(found, str):
            st.lists[child] = ItemList(attempt, error=f"cannot expand: {found}")
        else:
            st.lists[child] = replace(found, attempt=attempt)
