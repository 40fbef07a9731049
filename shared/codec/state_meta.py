"""The state blob's meta JSON (``shared.codec.state``): the sparse parts of a state that are
written only when present — incarnation and write count, earlier attempts, reused results, the
dynamic fan-out — and the checks of the read values, each raising CodecError."""

from __future__ import annotations

from typing import Any

from shared.engine.item_list import ItemList
from shared.engine.state import RuntimeState
from shared.errors import CodecError
from shared.limits import MAX_COUNTER


def versions_to_json(state: RuntimeState) -> dict[str, Any]:
    """Meta ``inc`` (the incarnation, version 5) and ``w`` (the writes, version 7)."""
    meta: dict[str, Any] = {}
    if state.incarnation is not None:
        meta["inc"] = state.incarnation
    if state.incarnation_blobs and state.writes:
        meta["w"] = state.writes
    return meta


def attempts_to_json(state: RuntimeState) -> dict[str, Any]:
    """Meta of attempts beyond the current ones: earlier attempts (``hist``, version 3) and
    results reused from the cache (``cached``, version 4); empty when there are none."""
    meta: dict[str, Any] = {}
    if state.history:
        meta["hist"] = {
            str(t): [past.to_json() for past in kept] for t, kept in sorted(state.history.items())
        }
    if state.cached:
        meta["cached"] = {
            str(t): origin.model_dump(mode="json") for t, origin in sorted(state.cached.items())
        }
    return meta


def dynamic_to_json(state: RuntimeState) -> dict[str, Any] | None:
    """The captured lists and the expansions (version 2), or None when there are none."""
    if not state.lists and not state.expansions:
        return None
    lists: dict[str, list[Any]] = {}
    for task, captured in sorted(state.lists.items()):
        entry: list[Any] = [captured.attempt, list(captured.items)]
        if captured.error is not None:
            entry.append(captured.error)
        lists[str(task)] = entry
    return {"x": [list(e) for e in state.expansions], "l": lists}


def dynamic_from_json(raw: Any, st: RuntimeState) -> None:
    """Restore the captured lists and the expansions into ``st``."""
    if raw is None:
        return
    for key, entry in raw["l"].items():
        attempt, items, *error = entry
        st.lists[int(key)] = ItemList(int(attempt), tuple(items), str(error[0]) if error else None)
    st.expansions = [(int(group), int(count)) for group, count in raw["x"]]
    if any(group not in st.lists or count < 0 for group, count in st.expansions):
        raise CodecError("state blob is corrupt: an expansion without its list")


def read_incarnation(raw: Any) -> int | None:
    if raw is None:
        return None
    if type(raw) is not int or not 1 <= raw <= MAX_COUNTER:
        raise CodecError(f"state blob is corrupt: incarnation {str(raw)[:40]!r}")
    return raw


def task_keys(mapping: dict[str, Any], n: int, field: str) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for key, value in mapping.items():
        task = int(key)
        if not 0 <= task < n:
            raise CodecError(f"state blob is corrupt: {field} names task number {task} of {n}")
        out[task] = value
    return out


def read_count(value: object) -> int:
    if type(value) is not int or not 0 <= value <= MAX_COUNTER:
        raise CodecError(f"state blob is corrupt: write count {str(value)[:40]!r}")
    return value
