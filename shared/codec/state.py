"""The state blob's compact, versioned codec (the definition blob's is ``shared.codec.definition``).

State blob (``{id}.state``, rewritten by the coordinator): ``b"DQS" + version byte +
zlib(body)``; the body is a fixed header followed by length-prefixed sections:

- ``meta``: JSON of the rare fields — workflow id and error, per-task errors, outputs, log blobs,
  retry bases, re-send times, unusual exit codes, and the table of worker names;
- ``codes``: one byte per task (the state code, see ``shared.engine.state.TASK_STATES``);
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

Version 2 adds dynamic fan-out (meta ``dyn``: the captured lists and the expansions); version 3
adds the earlier attempts of tasks that ran more than once (meta ``hist``, see
``shared.engine.attempt_history``); version 4 results reused from the result cache (meta
``cached``: task -> the attempt it reused); version 5 the workflow's incarnation (meta ``inc``,
drawn at submit: every workflow submitted since has one); version 6 names the attempt blobs per
incarnation (``{id}/{incarnation}/{task}/{attempt}/``: a log flag means that name), where a
version 5 or older state's flags mean the flat ``{id}/{task}/{attempt}/`` (such a state keeps
that layout for life: it is written again as version 5); version 7 is version 6 with the count of
the coordinator's writes (meta ``w``: with the run, the version of the index row projected from
the state; a version 5 state keeps no count); version 8 is version 7 with the upstream digests of
attempts in flight (meta ``ups``: task -> digest, for tasks with parents); version 9 is version 8
with a tenth section, ``definition``: the workflow's definition blob bytes, carried when the
submit found them small (``MAX_CARRIED_DEFINITION_BYTES``), so that a reader of the state needs
no read of the definition blob (``carried_definition``; issue 32). A state is
written with the lowest version that holds it: one without any of these is version 1, byte for
byte as before. Every version stays readable. A blob with an unknown (newer) version, a bad
magic or corrupt content raises CodecError."""

from __future__ import annotations

__all__ = [
    "STATE_MAGIC",
    "STATE_VERSION",
    "carried_definition",
    "decode_state",
    "encode_state",
    "state_metadata",
]

import json
import struct
from collections import deque
from typing import Any

from pydantic import ValidationError

from shared.caching.entry import CachedFrom
from shared.codec.columns import pack, refs, rel, unpack, unrel
from shared.codec.framing import frame, open_blob, sections
from shared.codec.metadata import CODEC_KEY, CREATED_KEY, INCARNATION_KEY, RUN_KEY, STATUS_KEY
from shared.codec.state_meta import (
    attempts_to_json,
    dynamic_from_json,
    dynamic_to_json,
    read_count,
    read_incarnation,
    task_keys,
    versions_to_json,
)
from shared.definition.workflow import CompiledWorkflow
from shared.engine.attempt_history import PastAttempt
from shared.engine.expansion import expanded
from shared.engine.state import COMPLETED, READY, TASK_STATES, RuntimeState, to_ms
from shared.errors import CodecError
from shared.messages import OutputRef
from shared.names import ResourceNames
from shared.states import WorkflowStatus

STATE_MAGIC = b"DQS"
STATE_VERSION = 9
"""Newest state format read. Version 2 adds dynamic expansions (meta ``dyn``), version 3 earlier
attempts (meta ``hist``), version 4 results reused from the cache (meta ``cached``), version 5 the
incarnation (meta ``inc``), version 6 attempt blobs named per incarnation, version 7 the count of
writes (meta ``w``), version 8 upstream digests (``ups``), version 9 the carried definition (a
tenth section); a state without any is version 1."""
_CARRIES_DEFINITION = 9

_STATUSES: tuple[WorkflowStatus, ...] = tuple(WorkflowStatus)
_STATUS_CODE = {s: i for i, s in enumerate(_STATUSES)}
# n_tasks, status, flags, run, created_at, updated_at, finished_at, cancel_requested_at
_HEADER = struct.Struct("<IBBIdddd")
_FLAG_CANCEL = 1
_FLAG_FINISHED = 2
_FLAG_CANCEL_AT = 4
_LEN = struct.Struct("<I")


# -- state ---------------------------------------------------------------------------------------


def _fast_log_blob(workflow_id: str, task: str, attempt: int, incarnation: int | None) -> str:
    if incarnation is None:
        return f"{workflow_id}/{task}/{attempt}/log.txt"
    return f"{workflow_id}/{incarnation}/{task}/{attempt}/log.txt"


# The worker's conventional log blob name, inlined when it has the expected shape (it is computed
# for every task of every flush); ResourceNames stays the authority.
_log_blob = (
    _fast_log_blob
    if all(
        ResourceNames.log_blob("w", "t", 1, inc) == _fast_log_blob("w", "t", 1, inc)
        for inc in (None, 7)
    )
    else ResourceNames.log_blob
)


def state_metadata(state: RuntimeState) -> dict[str, str]:
    """Blob metadata of a state blob: workers HEAD it to notice a cancelled workflow, and a
    message of another incarnation of the id."""
    version = _version(state, dynamic=bool(state.expansions or state.lists))
    meta = {STATUS_KEY: state.status.value, RUN_KEY: str(state.run), CODEC_KEY: str(version)}
    meta[CREATED_KEY] = str(to_ms(state.created_at))
    if state.incarnation is not None:
        meta[INCARNATION_KEY] = str(state.incarnation)
    return meta


def _version(state: RuntimeState, *, dynamic: bool) -> int:
    """The lowest state format that holds ``state``."""
    if state.incarnation_blobs:
        if state.definition is not None:
            return _CARRIES_DEFINITION
        return 8 if state.upstream_digests else 7 if state.writes else 6
    if state.incarnation is not None:
        return 5
    if state.cached:
        return 4
    return 3 if state.history else 2 if dynamic else 1


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
    names, attempt, incarnation = state.names, state.attempt, state.blob_incarnation
    for task, blob in state.log_blob.items():
        if names and blob == _log_blob(state.workflow_id, names[task], attempt[task], incarnation):
            log_flags[task] = 1
        else:
            odd_logs[task] = blob
    codes = state.codes
    odd_exits = {
        str(t): code
        for t, code in enumerate(state.exit_code)
        if code != (0 if codes[t] == COMPLETED else None)
    }
    meta: dict[str, Any] = {"id": state.workflow_id} | versions_to_json(state)
    if state.error is not None:
        meta["error"] = state.error
    sparse: dict[str, dict[int, Any]] = {
        "errors": state.errors,
        "logs": odd_logs,
        "base": state.base_attempt,
        "sent": state.sent_ms,
        "ups": state.upstream_digests,
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
    dynamic = dynamic_to_json(state)
    if dynamic:
        meta["dyn"] = dynamic
    meta.update(attempts_to_json(state))

    base = [created] * n
    queued_refs = refs(state.queued_ms, base)
    started_refs = refs(state.started_ms, queued_refs)
    ready = [t for t in state.ready if codes[t] == READY]  # stale entries are dropped
    flags = (
        (_FLAG_CANCEL if state.cancel_requested else 0)
        | (_FLAG_FINISHED if state.finished_at is not None else 0)
        | (_FLAG_CANCEL_AT if state.cancel_requested_at is not None else 0)
    )
    sections = [
        json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode(),
        bytes(codes),
        pack("I", state.attempt),
        pack("Q", rel(state.queued_ms, base)),
        pack("Q", rel(state.started_ms, queued_refs)),
        pack("Q", rel(state.finished_ms, started_refs)),
        pack("I", worker_column),
        pack("I", ready),
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
    version = _version(state, dynamic=bool(dynamic))
    if version >= _CARRIES_DEFINITION and state.definition is not None:
        sections.append(state.definition)
    for section in sections:
        body.append(_LEN.pack(len(section)))
        body.append(section)
    return frame(STATE_MAGIC, version, b"".join(body))


def carried_definition(data: bytes) -> bytes | None:
    """The definition blob bytes a state blob carries (version 9), or None: an older state, or
    a definition too large to carry (read its blob). Raises CodecError for a corrupt blob."""
    at = len(STATE_MAGIC)
    if len(data) <= at or data[:at] != STATE_MAGIC or data[at] != _CARRIES_DEFINITION:
        return None  # decode_state tells what is wrong with a bad blob
    body = open_blob(data, STATE_MAGIC, STATE_VERSION, "state")
    try:
        return sections(body, _HEADER.size, 10)[9]
    except struct.error as exc:
        raise CodecError(f"state blob is corrupt: {type(exc).__name__}: {exc}") from None


def decode_state(data: bytes, wf: CompiledWorkflow) -> RuntimeState:
    """Read a state blob written by ``encode_state`` for workflow ``wf``. Raises CodecError."""
    body = open_blob(data, STATE_MAGIC, STATE_VERSION, "state")
    try:
        return _decode_state_body(body, wf, data[len(STATE_MAGIC)])
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
        ArithmeticError,  # a corrupt time of inf or nan: OverflowError in to_ms
    ) as exc:
        raise CodecError(f"state blob is corrupt: {type(exc).__name__}: {exc}") from None


def _decode_state_body(body: bytes, wf: CompiledWorkflow, version: int) -> RuntimeState:
    n, status, flags, run, created_at, updated_at, finished_at, cancel_at = _HEADER.unpack_from(
        body, 0
    )
    meta_raw, codes, attempt, queued, started, finished, worker_col, ready, log_flags, *carried = (
        sections(body, _HEADER.size, 10 if version >= _CARRIES_DEFINITION else 9)
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
    st.incarnation = read_incarnation(meta.get("inc"))
    st.incarnation_blobs = version >= 6
    st.writes = read_count(meta.get("w", 0)) if version >= 7 else 0
    st.definition = carried[0] if carried else None
    if st.incarnation_blobs and st.incarnation is None:
        raise CodecError("state blob is corrupt: blobs per incarnation without an incarnation")
    dynamic_from_json(dynamic, st)
    wf = expanded(wf, st)
    st.status = _STATUSES[status]
    st.run = run
    st.updated_at = updated_at
    st.finished_at = finished_at if flags & _FLAG_FINISHED else None
    st.cancel_requested = bool(flags & _FLAG_CANCEL)
    st.cancel_requested_at = cancel_at if flags & _FLAG_CANCEL_AT else None
    st.error = meta.get("error")
    st.codes = bytearray(codes)
    st.attempt = list(unpack("I", attempt, n))

    base = [to_ms(created_at)] * n
    st.queued_ms = unrel(unpack("Q", queued, n), base)
    queued_refs = refs(st.queued_ms, base)
    st.started_ms = unrel(unpack("Q", started, n), queued_refs)
    st.finished_ms = unrel(unpack("Q", finished, n), refs(st.started_ms, queued_refs))

    st.exit_code = [0 if c == COMPLETED else None for c in codes]
    for task, code in task_keys(meta.get("exits", {}), n, "exits").items():
        st.exit_code[task] = None if code is None else int(code)
    st.errors = {t: str(v) for t, v in task_keys(meta.get("errors", {}), n, "errors").items()}
    if len(log_flags) != n:
        raise CodecError("state blob is corrupt: bad log flags")
    st.names = tuple(wf.index)
    logs = {t: str(v) for t, v in task_keys(meta.get("logs", {}), n, "logs").items()}
    wid, task_names, attempts, inc = st.workflow_id, st.names, st.attempt, st.blob_incarnation
    st.log_blob = {
        t: _log_blob(wid, task_names[t], attempts[t], inc) for t, f in enumerate(log_flags) if f
    }
    st.log_blob.update(logs)
    st.base_attempt = {t: int(v) for t, v in task_keys(meta.get("base", {}), n, "base").items()}
    st.sent_ms = {t: int(v) for t, v in task_keys(meta.get("sent", {}), n, "sent").items()}
    st.upstream_digests = {t: str(v) for t, v in task_keys(meta.get("ups", {}), n, "ups").items()}
    st.outputs = {
        t: OutputRef.model_validate(v)
        for t, v in task_keys(meta.get("outputs", {}), n, "outputs").items()
    }
    st.cached = {
        t: CachedFrom.model_validate(v)
        for t, v in task_keys(meta.get("cached", {}), n, "cached").items()
    }
    names = [str(w) for w in meta.get("workers", [])]
    st.workers = {t: names[w - 1] for t, w in enumerate(unpack("I", worker_col, n)) if w}
    st.history = {
        t: [PastAttempt.from_json(e) for e in v]
        for t, v in task_keys(meta.get("hist", {}), n, "hist").items()
    }
    st.n_history = sum(len(v) for v in st.history.values())
    ready_tasks = unpack("I", ready, len(ready) // 4)
    if any(t >= n for t in ready_tasks):
        raise CodecError("state blob is corrupt: the ready queue names an unknown task")
    st.ready = deque(ready_tasks)
    st.rebuild_counters(wf)
    return st
