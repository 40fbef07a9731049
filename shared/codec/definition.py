"""The definition blob (``{id}.def``, written once): ``b"DQD" + version byte + zlib(JSON)``.

The JSON is the CompiledWorkflow in columns: the task names, the parents as index lists, then one
entry per TaskDef field. A field whose every task has the default is left out; a field with few
distinct values (queue, env, policies...) is a table of values plus one index per task; a field
with mostly distinct values (cmd of a foreach) is the plain list. Lists of numbers and strings
parse far faster than a list of objects, and zlib sees the repeats.

Version 2 adds the ``foreach_from`` column ``x``; version 3 the result-caching column ``k`` and
the GPU column ``gpu``; version 4 the webhooks ``nt`` (``notify:``, issue 29). A definition is
written in the oldest version that holds it. The workflow parameters (``prm``, a JSON object)
may be in any version: they are shown, never needed to run.
"""

from __future__ import annotations

import json
from typing import Any

from shared.codec.framing import frame, open_blob
from shared.definition.workflow import (
    NOTIFY_EVENTS,
    CachePolicy,
    CompiledWorkflow,
    ExpandFrom,
    NotifyTarget,
    RetryPolicy,
    TaskDef,
)
from shared.errors import CodecError

DEFINITION_MAGIC = b"DQD"
DEFINITION_VERSION = 4
"""Newest definition format read. Version 2 adds ``foreach_from`` (column ``x``), version 3
``cache`` and ``gpus`` (columns ``k``, ``gpu``), version 4 the webhooks (``nt``); a definition
without them is still written as version 1 (or 2, 3)."""
_VERSION_OF_COLUMN = {"x": 2, "k": 3, "gpu": 3, "nt": 4}
"""The first version with each optional column (or top-level entry)."""

_RETRY_DEFAULT = RetryPolicy()


def _retry_to_json(retry: RetryPolicy) -> list[Any]:
    codes = retry.retry_on_exit_codes
    return [
        retry.initial_delay_s,
        retry.multiplier,
        retry.max_delay_s,
        retry.jitter,
        None if codes is None else list(codes),
    ]


def _retry_from_json(raw: Any) -> RetryPolicy:
    initial, multiplier, max_delay, jitter, codes = raw
    return RetryPolicy(
        initial_delay_s=float(initial),
        multiplier=float(multiplier),
        max_delay_s=float(max_delay),
        jitter=float(jitter),
        retry_on_exit_codes=None if codes is None else tuple(int(c) for c in codes),
    )


def _dep_policy(raw: Any) -> Any:
    if isinstance(raw, bool) or not (isinstance(raw, int) or raw in ("all", "any", "all_settled")):
        raise CodecError(f"definition blob is corrupt: dep_policy {raw!r}")
    return raw


def _str_dict(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()}


def _params(raw: Any) -> dict[str, Any]:
    """The workflow parameters (``prm``): name -> string, number or bool."""
    if not isinstance(raw, dict) or not all(
        isinstance(v, str | int | float | bool) for v in raw.values()
    ):
        raise CodecError("definition blob is corrupt: params")
    return {str(k): v for k, v in raw.items()}


def _optional_str(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _optional_float(raw: Any) -> float | None:
    return None if raw is None else float(raw)


# (key in the blob, TaskDef field, default, to JSON, from JSON), in TaskDef's field order after
# ``name``; ``parents`` is stored apart.
_FIELDS: tuple[tuple[str, str, Any, Any, Any], ...] = (
    ("c", "cmd", None, None, str),
    ("q", "queue", None, None, str),
    ("e", "env", {}, None, _str_dict),
    ("w", "cwd", None, None, _optional_str),
    ("dp", "dep_policy", "all", None, _dep_policy),
    ("t", "timeout_s", None, None, _optional_float),
    ("qt", "queue_timeout_s", None, None, _optional_float),
    ("r", "num_retries", 0, None, int),
    ("rp", "retry", _RETRY_DEFAULT, _retry_to_json, _retry_from_json),
    ("if", "condition", None, None, _optional_str),
    ("g", "group", None, None, _optional_str),
    ("pa", "params", None, None, lambda raw: raw),
    ("x", "expand", None, lambda e: _expand_to_json(e), lambda raw: _expand(raw)),
    ("k", "cache", None, lambda c: _cache_to_json(c), lambda raw: _cache(raw)),
    ("gpu", "gpus", None, None, lambda raw: None if raw is None else int(raw)),
)


def _cache_to_json(policy: CachePolicy | None) -> list[Any] | None:
    return None if policy is None else [policy.version, policy.ttl_s, policy.refresh]


def _cache(raw: Any) -> CachePolicy | None:
    if raw is None:
        return None
    version, ttl_s, refresh = raw
    return CachePolicy(str(version), float(ttl_s), bool(refresh))


def _expand_to_json(e: ExpandFrom | None) -> list[Any] | None:
    return None if e is None else [e.source, list(e.path), e.max_width]


def _expand(raw: Any) -> ExpandFrom | None:
    if raw is None:
        return None
    source, path, max_width = raw
    return ExpandFrom(int(source), tuple(str(key) for key in path), int(max_width))


def _notify(raw: Any) -> tuple[NotifyTarget, ...]:
    targets = []
    for url, events, secret, fmt in raw:
        if fmt not in ("json", "slack", "teams") or not all(e in NOTIFY_EVENTS for e in events):
            raise CodecError(f"definition blob is corrupt: webhook {fmt!r} {events!r}")
        targets.append(NotifyTarget(str(url), tuple(events), _optional_str(secret), fmt))
    return tuple(targets)


_REQUIRED = frozenset({"cmd", "queue"})
"""Fields without a default: always stored."""


def _encode_column(values: list[Any], to_json: Any) -> dict[str, Any]:
    table: dict[Any, int] = {}
    column: list[Any] = []
    indices: list[int] = []
    for value in values:
        raw = value if to_json is None else to_json(value)
        # Scalars key by (type, value): 1, 1.0 and True must stay apart. Others by their JSON.
        key: Any = (
            (type(raw), raw)
            if raw is None or isinstance(raw, str | int | float)
            else json.dumps(raw, sort_keys=True, separators=(",", ":"))
        )
        at = table.get(key)
        if at is None:
            at = table[key] = len(column)
            column.append(raw)
        indices.append(at)
    if len(column) * 2 > len(values):  # mostly distinct: the plain list is smaller
        return {
            "v": [values[i] if to_json is None else to_json(values[i]) for i in range(len(values))]
        }
    return {"t": column, "i": indices}


def _decode_column(raw: dict[str, Any], n: int, from_json: Any, key: str) -> list[Any]:
    if "v" in raw:
        values = [from_json(v) for v in raw["v"]]
    else:
        table = [from_json(v) for v in raw["t"]]
        values = [table[i] for i in raw["i"]]
    if len(values) != n:
        raise CodecError(f"definition blob is corrupt: column {key!r} has {len(values)} values")
    return values


def encode_definition(wf: CompiledWorkflow) -> bytes:
    """The definition blob bytes of a compiled workflow."""
    tasks = wf.tasks
    doc: dict[str, Any] = {
        "name": wf.name,
        "n": [t.name for t in tasks],
        "p": [list(t.parents) for t in tasks],
    }
    for key, attr, default, to_json, _ in _FIELDS:
        values = [getattr(t, attr) for t in tasks]
        if attr in _REQUIRED or any(v != default for v in values):
            doc[key] = _encode_column(values, to_json)
    if wf.max_parallelism is not None:
        doc["mp"] = wf.max_parallelism
    if wf.result_policy != "all_sinks_succeed":
        doc["res"] = wf.result_policy
    if wf.source is not None:
        doc["src"] = wf.source
    if wf.notify:
        doc["nt"] = [[t.url, list(t.events), t.secret, t.format] for t in wf.notify]
    if wf.params:
        # Any version: the tasks hold the values already; a reader without this key shows none.
        doc["prm"] = wf.params
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    version = max([1] + [v for key, v in _VERSION_OF_COLUMN.items() if key in doc])
    return frame(DEFINITION_MAGIC, version, text)


def decode_definition(data: bytes) -> CompiledWorkflow:
    """Read a definition blob written by ``encode_definition``. Raises CodecError."""
    body = open_blob(data, DEFINITION_MAGIC, DEFINITION_VERSION, "definition")
    try:
        doc = json.loads(body)
        names = [str(name) for name in doc["n"]]
        n = len(names)
        parents = [tuple(p) for p in doc["p"]]
        if len(parents) != n or not all(
            type(p) is int and 0 <= p < n for ps in parents for p in ps
        ):
            raise CodecError("definition blob is corrupt: a task names an unknown parent")
        columns: list[list[Any]] = [names]
        for key, attr, default, _, from_json in _FIELDS:
            if key in doc:
                columns.append(_decode_column(doc[key], n, from_json, key))
            elif attr in _REQUIRED:
                raise CodecError(f"definition blob is corrupt: no {attr} column")
            else:
                columns.append([default] * n)
            if attr == "cwd":
                columns.append(parents)  # TaskDef's field order: ..., cwd, parents, dep_policy...
        tasks = [TaskDef(*row) for row in zip(*columns, strict=True)]
        result_policy = doc.get("res", "all_sinks_succeed")
        if result_policy not in ("all_sinks_succeed", "all_tasks_succeed"):
            raise CodecError(f"definition blob is corrupt: result_policy {result_policy!r}")
        return CompiledWorkflow.of(
            str(doc["name"]),
            tasks,
            max_parallelism=doc.get("mp"),
            result_policy=result_policy,
            source=doc.get("src"),
            notify=_notify(doc.get("nt", [])),
            params=_params(doc.get("prm", {})),
        )
    except CodecError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise CodecError(f"definition blob is corrupt: {type(exc).__name__}: {exc}") from None
