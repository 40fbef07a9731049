"""The compact, versioned codecs of the two workflow blobs.

Definition blob (``{id}.def``, written once): ``b"DQD" + version byte + zlib(JSON)``, the JSON being
the CompiledWorkflow in columns (names, parents as index lists, one column per task field with
defaults omitted and repeated values tabled).

State blob (``{id}.state``, rewritten by the coordinator): ``b"DQS" + version byte +
zlib(body)``; the body is a fixed header followed by length-prefixed sections:

- ``meta``: JSON of the rare fields — workflow id and error, per-task errors, outputs, log blobs,
  retry bases, re-send times, unusual exit codes, and the table of worker names;
- ``codes``: one byte per task (the state code, see ``shared.state.TASK_STATES``);
- ``attempt``: uint32 per task; ``worker``: uint32 per task (1 + index into the worker table, 0 =
  none); ``ready``: uint32 per entry of the ready queue;
- ``logs``: one byte per task, 1 = its log blob has the worker's conventional name (rebuilt from
  workflow id, task name and attempt); other log blob names are in ``meta``;
- ``queued``/``started``/``finished``: uint64 per task, integer milliseconds stored relative to a
  reference (queued to the workflow's creation, started to queued, finished to started), zigzag
  encoded, plus one (0 = no value).

Integer columns are stored as byte planes (all lowest bytes, then all next bytes...) so that zlib
sees long runs of zeros and repeats: a finished 1,000-task workflow fits in about 3 KB. Derived
bookkeeping (per-state counts, parent counters) is not stored; decoding recomputes it.

Version 1 is the only version; a later dagq keeps reading it. A blob with an unknown (newer)
version, a bad magic or corrupt content raises CodecError.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from array import array
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from shared.engine.expansion import expanded
from shared.errors import CodecError
from shared.messages import OutputRef
from shared.names import ResourceNames
from shared.state import COMPLETED, READY, TASK_STATES, ItemList, RuntimeState, to_ms
from shared.states import WorkflowStatus
from shared.workflow import CompiledWorkflow, ExpandFrom, RetryPolicy, TaskDef

STATE_MAGIC = b"DQS"
DEFINITION_MAGIC = b"DQD"
STATE_VERSION = 2
"""Newest state format read. Version 2 adds dynamic expansions (meta ``dyn``); a state without
any is still written as version 1, byte for byte what earlier releases wrote."""
DEFINITION_VERSION = 2
"""Newest definition format read. Version 2 adds ``foreach_from`` (column ``x``); a definition
without one is still written as version 1."""
_ZLIB_LEVEL = 6  # level 9 saves ~1% here for twice the time

_STATUSES: tuple[WorkflowStatus, ...] = tuple(WorkflowStatus)
_STATUS_CODE = {s: i for i, s in enumerate(_STATUSES)}
# n_tasks, status, flags, run, created_at, updated_at, finished_at, cancel_requested_at
_HEADER = struct.Struct("<IBBIdddd")
_FLAG_CANCEL = 1
_FLAG_FINISHED = 2
_FLAG_CANCEL_AT = 4
_LEN = struct.Struct("<I")
_BIG_ENDIAN = sys.byteorder == "big"


# -- integer columns as byte planes --------------------------------------------------------------


def _pack(typecode: str, values: Iterable[int]) -> bytes:
    column = array(typecode, values)
    if _BIG_ENDIAN:
        column.byteswap()
    raw = column.tobytes()
    width = column.itemsize
    return b"".join(raw[k::width] for k in range(width))


def _unpack(typecode: str, data: bytes, n: int) -> array[int]:
    column = array(typecode)
    width = column.itemsize
    if len(data) != n * width:
        raise CodecError(
            f"state blob is corrupt: a column holds {len(data)} bytes, expected {n * width}"
        )
    raw = bytearray(len(data))
    for k in range(width):
        raw[k::width] = data[k * n : (k + 1) * n]
    column.frombytes(raw)
    if _BIG_ENDIAN:
        column.byteswap()
    return column


def _rel(values: list[int | None], refs: list[int]) -> list[int]:
    """Each value minus its reference, zigzag-encoded (small magnitudes -> small numbers), plus
    one; 0 stands for None. Inlined arithmetic: this runs over every task of every flush."""
    return [
        0 if v is None else ((v - r) << 1 if v >= r else ((r - v) << 1) - 1) + 1
        for v, r in zip(values, refs, strict=True)
    ]


def _unrel(stored: array[int], refs: list[int]) -> list[int | None]:
    """The inverse of ``_rel``."""
    return [
        None if z == 0 else (r + ((z - 1) >> 1) if z & 1 else r - (z >> 1))
        for z, r in zip(stored, refs, strict=True)
    ]


def _refs(primary: list[int | None], fallback: list[int]) -> list[int]:
    return [f if p is None else p for p, f in zip(primary, fallback, strict=True)]


# -- state ---------------------------------------------------------------------------------------


def _fast_log_blob(workflow_id: str, task: str, attempt: int) -> str:
    return f"{workflow_id}/{task}/{attempt}/log.txt"


# The worker's conventional log blob name, inlined when it has the expected shape (it is computed
# for every task of every flush); ResourceNames stays the authority.
_log_blob = (
    _fast_log_blob
    if ResourceNames.log_blob("w", "t", 1) == _fast_log_blob("w", "t", 1)
    else ResourceNames.log_blob
)


def state_metadata(state: RuntimeState) -> dict[str, str]:
    """Blob metadata of a state blob: workers HEAD it to notice a cancelled workflow."""
    version = STATE_VERSION if state.expansions or state.lists else 1
    return {"status": state.status.value, "run": str(state.run), "codec": str(version)}


def status_from_metadata(metadata: Mapping[str, str]) -> WorkflowStatus | None:
    """The workflow status that ``state_metadata`` recorded; None when there is none this dagq
    knows. Keys match in any case (the blob service does not keep the case of metadata names)."""
    value = next((v for k, v in metadata.items() if k.lower() == "status"), None)
    try:
        return None if value is None else WorkflowStatus(value.lower())
    except ValueError:
        return None


def encode_state(state: RuntimeState) -> bytes:
    """The state blob bytes of ``state`` (exactly what ``decode_state`` reads back)."""
    n = len(state)
    created = to_ms(state.created_at)
    worker_names: list[str | None] = [None] * n
    for task, name in state.workers.items():
        worker_names[task] = name
    worker_table: dict[str, int] = {}  # in order of first use by task number: canonical
    worker_column = [
        0 if name is None else worker_table.setdefault(name, len(worker_table) + 1)
        for name in worker_names
    ]
    # A log blob under the worker's conventional name ({workflow}/{task}/{attempt}/log.txt) is one
    # flag byte instead of a string: every task has one, and the names would dominate the blob.
    log_flags = bytearray(n)
    odd_logs: dict[int, str] = {}
    names, attempt = state.names, state.attempt
    for task, blob in state.log_blob.items():
        if names and blob == _log_blob(state.workflow_id, names[task], attempt[task]):
            log_flags[task] = 1
        else:
            odd_logs[task] = blob
    codes = state.codes
    odd_exits = {
        str(t): code
        for t, code in enumerate(state.exit_code)
        if code != (0 if codes[t] == COMPLETED else None)
    }
    meta: dict[str, Any] = {"id": state.workflow_id}
    if state.error is not None:
        meta["error"] = state.error
    sparse: dict[str, dict[int, Any]] = {
        "errors": state.errors,
        "logs": odd_logs,
        "base": state.base_attempt,
        "sent": state.sent_ms,
    }
    for key, mapping in sparse.items():
        if mapping:
            meta[key] = {str(t): v for t, v in sorted(mapping.items())}  # canonical order
    if state.outputs:
        meta["outputs"] = {
            str(t): ref.model_dump(mode="json", exclude_defaults=True)
            for t, ref in sorted(state.outputs.items())
        }
    if odd_exits:
        meta["exits"] = odd_exits
    if worker_table:
        meta["workers"] = list(worker_table)
    dynamic = _dynamic_to_json(state)
    if dynamic:
        meta["dyn"] = dynamic

    base = [created] * n
    queued_refs = _refs(state.queued_ms, base)
    started_refs = _refs(state.started_ms, queued_refs)
    ready = [t for t in state.ready if codes[t] == READY]  # stale entries are dropped
    flags = (
        (_FLAG_CANCEL if state.cancel_requested else 0)
        | (_FLAG_FINISHED if state.finished_at is not None else 0)
        | (_FLAG_CANCEL_AT if state.cancel_requested_at is not None else 0)
    )
    sections = [
        json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode(),
        bytes(codes),
        _pack("I", state.attempt),
        _pack("Q", _rel(state.queued_ms, base)),
        _pack("Q", _rel(state.started_ms, queued_refs)),
        _pack("Q", _rel(state.finished_ms, started_refs)),
        _pack("I", worker_column),
        _pack("I", ready),
        bytes(log_flags),
    ]
    body = [
        _HEADER.pack(
            n,
            _STATUS_CODE[state.status],
            flags,
            state.run,
            state.created_at,
            state.updated_at,
            state.finished_at or 0.0,
            state.cancel_requested_at or 0.0,
        )
    ]
    for section in sections:
        body.append(_LEN.pack(len(section)))
        body.append(section)
    version = STATE_VERSION if dynamic else 1
    return STATE_MAGIC + bytes([version]) + zlib.compress(b"".join(body), _ZLIB_LEVEL)


def _dynamic_to_json(state: RuntimeState) -> dict[str, Any] | None:
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


def _dynamic_from_json(raw: Any, st: RuntimeState) -> None:
    """Restore the captured lists and the expansions into ``st``."""
    if raw is None:
        return
    for key, entry in raw["l"].items():
        attempt, items, *error = entry
        st.lists[int(key)] = ItemList(int(attempt), tuple(items), str(error[0]) if error else None)
    st.expansions = [(int(group), int(count)) for group, count in raw["x"]]
    if any(group not in st.lists or count < 0 for group, count in st.expansions):
        raise CodecError("state blob is corrupt: an expansion without its list")


def _open(data: bytes, magic: bytes, version: int, what: str) -> bytes:
    if len(data) < len(magic) + 1 or data[: len(magic)] != magic:
        raise CodecError(f"{what} blob is not a dagq {what} blob (bad magic bytes)")
    found = data[len(magic)]
    if found > version:
        raise CodecError(
            f"{what} blob has format version {found}, newer than this dagq reads ({version}): "
            "upgrade dagq"
        )
    if found < 1:
        raise CodecError(f"{what} blob has invalid format version {found}")
    try:
        return zlib.decompress(data[len(magic) + 1 :])
    except zlib.error as exc:
        raise CodecError(f"{what} blob is corrupt: {exc}") from None


def _sections(body: bytes, at: int, count: int) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(count):
        (size,) = _LEN.unpack_from(body, at)
        at += _LEN.size
        if at + size > len(body):
            raise CodecError("state blob is corrupt: a section runs past the end")
        out.append(body[at : at + size])
        at += size
    if at != len(body):
        raise CodecError("state blob is corrupt: trailing bytes after the last section")
    return out


def _task_keys(mapping: dict[str, Any], n: int, field: str) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for key, value in mapping.items():
        task = int(key)
        if not 0 <= task < n:
            raise CodecError(f"state blob is corrupt: {field} names task number {task} of {n}")
        out[task] = value
    return out


def decode_state(data: bytes, wf: CompiledWorkflow) -> RuntimeState:
    """Read a state blob written by ``encode_state`` for workflow ``wf``. Raises CodecError."""
    body = _open(data, STATE_MAGIC, STATE_VERSION, "state")
    try:
        return _decode_state_body(body, wf)
    except CodecError:
        raise
    except (
        struct.error,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        ValidationError,
        RecursionError,
    ) as exc:
        raise CodecError(f"state blob is corrupt: {type(exc).__name__}: {exc}") from None


def _decode_state_body(body: bytes, wf: CompiledWorkflow) -> RuntimeState:
    n, status, flags, run, created_at, updated_at, finished_at, cancel_at = _HEADER.unpack_from(
        body, 0
    )
    meta_raw, codes, attempt, queued, started, finished, worker_col, ready, log_flags = _sections(
        body, _HEADER.size, 9
    )
    meta = json.loads(meta_raw)
    if not isinstance(meta, dict):
        raise CodecError("state blob is corrupt: meta is not an object")
    dynamic = meta.get("dyn")
    added = sum(int(count) for _, count in dynamic["x"]) if dynamic is not None else 0
    if n != len(wf.tasks) + added:
        raise CodecError(
            f"state blob has {n} tasks but workflow {wf.name!r} defines {len(wf.tasks)}"
            f" (and {added} expanded): the state does not belong to this definition"
        )
    if len(codes) != n or (n and max(codes) >= len(TASK_STATES)):
        raise CodecError("state blob is corrupt: bad task state codes")
    st = RuntimeState(str(meta["id"]), n, created_at)
    _dynamic_from_json(dynamic, st)
    wf = expanded(wf, st)
    st.status = _STATUSES[status]
    st.run = run
    st.updated_at = updated_at
    st.finished_at = finished_at if flags & _FLAG_FINISHED else None
    st.cancel_requested = bool(flags & _FLAG_CANCEL)
    st.cancel_requested_at = cancel_at if flags & _FLAG_CANCEL_AT else None
    st.error = meta.get("error")
    st.codes = bytearray(codes)
    st.attempt = list(_unpack("I", attempt, n))

    base = [to_ms(created_at)] * n
    st.queued_ms = _unrel(_unpack("Q", queued, n), base)
    queued_refs = _refs(st.queued_ms, base)
    st.started_ms = _unrel(_unpack("Q", started, n), queued_refs)
    st.finished_ms = _unrel(_unpack("Q", finished, n), _refs(st.started_ms, queued_refs))

    st.exit_code = [0 if c == COMPLETED else None for c in codes]
    for task, code in _task_keys(meta.get("exits", {}), n, "exits").items():
        st.exit_code[task] = None if code is None else int(code)
    st.errors = {t: str(v) for t, v in _task_keys(meta.get("errors", {}), n, "errors").items()}
    if len(log_flags) != n:
        raise CodecError("state blob is corrupt: bad log flags")
    st.names = tuple(wf.index)
    logs = {t: str(v) for t, v in _task_keys(meta.get("logs", {}), n, "logs").items()}
    wid, task_names, attempts = st.workflow_id, st.names, st.attempt
    st.log_blob = {
        t: _log_blob(wid, task_names[t], attempts[t]) for t, f in enumerate(log_flags) if f
    }
    st.log_blob.update(logs)
    st.base_attempt = {t: int(v) for t, v in _task_keys(meta.get("base", {}), n, "base").items()}
    st.sent_ms = {t: int(v) for t, v in _task_keys(meta.get("sent", {}), n, "sent").items()}
    st.outputs = {
        t: OutputRef.model_validate(v)
        for t, v in _task_keys(meta.get("outputs", {}), n, "outputs").items()
    }
    names = [str(w) for w in meta.get("workers", [])]
    st.workers = {t: names[w - 1] for t, w in enumerate(_unpack("I", worker_col, n)) if w}
    ready_tasks = _unpack("I", ready, len(ready) // 4)
    if any(t >= n for t in ready_tasks):
        raise CodecError("state blob is corrupt: the ready queue names an unknown task")
    st.ready = deque(ready_tasks)
    st.rebuild_counters(wf)
    return st


# -- definition ----------------------------------------------------------------------------------
#
# Columnar JSON: one entry per TaskDef field. A field whose every task has the default is left out;
# a field with few distinct values (queue, env, policies...) is a table of values plus one index per
# task; a field with mostly distinct values (cmd of a foreach) is the plain list. Lists of numbers
# and strings parse far faster than a list of objects, and zlib sees the repeats.

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
)


def _expand_to_json(e: ExpandFrom | None) -> list[Any] | None:
    return None if e is None else [e.source, list(e.path), e.max_width]


def _expand(raw: Any) -> ExpandFrom | None:
    if raw is None:
        return None
    source, path, max_width = raw
    return ExpandFrom(int(source), tuple(str(key) for key in path), int(max_width))


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
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    version = DEFINITION_VERSION if "x" in doc else 1
    return DEFINITION_MAGIC + bytes([version]) + zlib.compress(text, _ZLIB_LEVEL)


def decode_definition(data: bytes) -> CompiledWorkflow:
    """Read a definition blob written by ``encode_definition``. Raises CodecError."""
    body = _open(data, DEFINITION_MAGIC, DEFINITION_VERSION, "definition")
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
        )
    except CodecError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise CodecError(f"definition blob is corrupt: {type(exc).__name__}: {exc}") from None
