"""The files of one attempt: its directory, the task's output, its parents' outputs, its log.

Layout under ``--work-dir`` (names come from validated workflow ids and task names, so they cannot
leave it)::

    attempts/{workflow}/{task}/{attempt}/
        work/           default cwd of the task (fresh for every attempt)
        output.json     $DAGQ_OUTPUT: the task may write its JSON output here
        upstream.json   $DAGQ_UPSTREAM: {parent: output value} of its parents
        log.txt         stdout and stderr
        progress.jsonl  $DAGQ_PROGRESS: JSON lines of progress and metrics the task may append
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue, ValidationError

from shared.errors import MessageError, NotFoundError
from shared.json_values import parse_untrusted
from shared.messages import OutputRef, TaskMessage, upstream_digest
from shared.messages.fields import parent_output_blob
from shared.names import ResourceNames
from shared.storage.ports import OutputBlobs
from worker_agent.errors import AttemptError
from worker_agent.reporting import retry_transient

UPSTREAM_FETCH_CONCURRENCY = 16


@dataclass(frozen=True)
class AttemptPaths:
    """Where one attempt's files live."""

    root: Path
    work: Path
    output: Path
    upstream: Path
    log: Path
    progress: Path

    @classmethod
    def create(cls, work_dir: Path, message: TaskMessage) -> AttemptPaths:
        """Make a fresh attempt directory (a leftover from an earlier run of it is removed)."""
        root = work_dir / "attempts" / message.workflow_id / message.task / str(message.attempt)
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
        work = root / "work"
        work.mkdir(parents=True)
        return cls(
            root=root,
            work=work,
            output=root / "output.json",
            upstream=root / "upstream.json",
            log=root / "log.txt",
            progress=root / "progress.jsonl",
        )

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def resolve_cwd(work_dir: Path, default: Path, cwd: str | None) -> Path:
    """The directory a task runs in.

    None: ``default`` (the attempt's fresh work dir). Absolute: used as given, and must exist.
    Relative: resolved under ``work_dir`` (created if missing) and may not leave it — ``..`` or a
    symlink pointing outside is refused.
    """
    if cwd is None or cwd == "":
        return default
    if "\x00" in cwd:
        raise AttemptError("cwd contains a NUL character")
    path = Path(cwd)
    if path.is_absolute():
        if not path.is_dir():
            raise AttemptError(f"cwd {cwd!r} does not exist on this worker (or is not a directory)")
        return path
    root = work_dir.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise AttemptError(
            f"relative cwd {cwd!r} leaves the worker's work directory: use a path inside it, or "
            "an absolute path"
        )
    try:
        os.close(open_directory(target, beneath=root, create=True))
    except OSError as exc:
        raise AttemptError(f"cannot use relative cwd {cwd!r}: {exc}") from None
    return target


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def open_directory(path: Path, *, beneath: Path, create: bool = False) -> int:
    """A descriptor of the directory ``path``.

    Under ``beneath`` (the work dir, where tasks may own directories) it is reached one component
    at a time, each opened relative to its parent's descriptor without following a link, and
    created (as the agent's user) when ``create`` and missing: a component a task swapped for a
    link fails (OSError) instead of leading the agent elsewhere. Anywhere else (an absolute cwd
    the API caller named) it is opened like ``chdir`` would. The caller closes it."""
    relative = _relative(path, beneath)
    if relative is None:
        return os.open(path, _DIRECTORY)
    fd = os.open(beneath, _DIRECTORY)
    try:
        for part in relative.parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(part, _DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_cwd(cwd: Path, work_dir: Path) -> int:
    """The cwd of a task of another user, as a descriptor: the child changes into it
    (``/proc/self/fd/N``) while still root, before it drops to the task user (runner.py)."""
    try:
        return open_directory(cwd, beneath=work_dir)
    except OSError as exc:
        raise AttemptError(f"cwd {str(cwd)!r} is not a directory to start in: {exc}") from None


class closing_fd(contextlib.AbstractContextManager["closing_fd"]):
    """Closes a descriptor (if any) once, at the end of a ``with`` block or on ``close()``."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __exit__(self, *exc: object) -> None:
        self.close()


def _relative(path: Path, base: Path) -> Path | None:
    for root in (base, base.resolve()):
        if path.is_relative_to(root):
            return path.relative_to(root)
    return None


def read_output(path: Path, max_bytes: int) -> tuple[JsonValue, bytes] | None:
    """The task's output value and its bytes, or None when it wrote none (no file, or empty).

    The file is opened without following a symlink and without blocking on a FIFO, checked on
    the open descriptor to be a regular file, and read up to ``max_bytes`` + 1 bytes only, so
    whatever the task left at the path, the worker neither hangs nor reads past the limit.
    Raises AttemptError when the file is not a regular file, too large, or not valid JSON.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:  # ELOOP: a symlink (or a path the worker may not open)
        raise AttemptError(_NOT_REGULAR) from None
    try:
        info = os.fstat(fd)
        # A second name is a hard link: maybe to a file the task could not read itself.
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise AttemptError(_NOT_REGULAR)
        raw = _read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise AttemptError(
            f"output file $DAGQ_OUTPUT is over the worker's limit of {max_bytes} "
            "bytes: write large results to your own storage and output a reference to them"
        )
    if not raw.strip():
        return None
    try:
        value = parse_untrusted(raw)
    except ValueError as exc:
        raise AttemptError(f"output file $DAGQ_OUTPUT is not valid JSON: {exc}") from None
    return value, raw


_NOT_REGULAR = "output $DAGQ_OUTPUT must be a regular file (not a link, hard link, FIFO, device...)"


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def compact_json(value: JsonValue) -> bytes:
    """The compact UTF-8 JSON encoding used to measure and store outputs."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _parse_json(data: bytes, what: str) -> Any:
    try:
        return parse_untrusted(data)
    except ValueError as exc:
        raise AttemptError(f"{what} is not valid JSON: {exc}") from None


async def _get_blob(outputs: OutputBlobs, name: str, what: str) -> bytes:
    try:
        return await retry_transient(f"downloading {name}", lambda: outputs.get(name))
    except NotFoundError:
        raise AttemptError(f"{what} is missing: blob {name!r} not found") from None


@dataclass(frozen=True)
class Upstream:
    """What an attempt runs on: ``{parent: output value}``, and the ``upstream_digest`` of the
    refs they were read from (the bundle's, with ``upstream_blob``: another send of the same
    attempt, under a policy other than ``all``, may have written it with other refs)."""

    values: dict[str, JsonValue]
    digest: str


async def upstream_values(message: TaskMessage, outputs: OutputBlobs) -> dict[str, JsonValue]:
    """``{parent: output value}`` for the parents listed in the message (inline or by blob)."""
    return (await read_upstream(message, outputs)).values


async def read_upstream(message: TaskMessage, outputs: OutputBlobs) -> Upstream:
    """The parents' outputs the message lists (inline or by blob), and their refs' digest."""
    refs: dict[str, OutputRef] = dict(message.upstream or {})
    if message.upstream_blob:  # named from the message's validated ids, not taken from it
        name = ResourceNames.upstream_blob(
            message.workflow_id, message.task, message.attempt, message.blob_incarnation
        )
        data = await _get_blob(outputs, name, "the upstream bundle")
        bundle = _parse_json(data, f"upstream bundle {name!r}")
        if not isinstance(bundle, dict):
            raise AttemptError(f"upstream bundle {name!r} is not a JSON object")
        try:
            refs.update({str(k): OutputRef.model_validate(v) for k, v in bundle.items()})
        except ValidationError as exc:
            raise AttemptError(f"upstream bundle {name!r}: {exc}") from None
    limit = asyncio.Semaphore(UPSTREAM_FETCH_CONCURRENCY)

    async def value(parent: str, ref: OutputRef) -> JsonValue:
        try:
            blob = parent_output_blob(message.workflow_id, parent, ref.blob, message.incarnation)
        except MessageError as exc:
            raise AttemptError(str(exc)) from None
        if blob is None:
            return ref.inline
        async with limit:
            data = await _get_blob(outputs, blob, f"the output of parent {parent!r}")
        parsed: JsonValue = _parse_json(data, f"output of parent {parent!r}")
        return parsed

    names = list(refs)
    values = await asyncio.gather(*(value(name, refs[name]) for name in names))
    return Upstream(dict(zip(names, values, strict=True)), upstream_digest(refs))


def write_json(path: Path, value: JsonValue) -> None:
    """Write a new file at ``path`` (never through a link, never over an existing file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as file:
        file.write(compact_json(value))
