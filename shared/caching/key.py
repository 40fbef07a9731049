"""The cache key of a task attempt: a hash of everything that determines its result.

In the key: the rendered command, the environment (the workflow's merged under the task's), the
working directory, the queue, the GPU count, the task's cache version, and the content of each
parent output the task receives (by parent name: an inline value's canonical JSON, or a blob
output's SHA-256 as the worker computed it). Not in the key: the workflow id, run, attempt and
task name, the blob names of outputs (they differ per run), timeouts, retries and dagq's own
``DAGQ_*`` variables. Pure: no storage, no clock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from shared.definition.workflow import TaskDef
from shared.messages import OutputRef

KEY_FORMAT = 1
"""Bumped when what goes into a key changes: every earlier entry then misses, never misleads."""


def content_digest(value: JsonValue) -> str:
    """SHA-256 of a JSON value's canonical encoding (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def output_digest(ref: OutputRef) -> str | None:
    """What stands for a parent's output in a key: ``j:`` + the digest of an inline value, ``b:``
    + a blob output's content hash; None for a blob output without one (an older worker's: the
    task is then not cacheable, it runs)."""
    if ref.blob is None:
        return "j:" + content_digest(ref.inline)
    return None if ref.sha256 is None else "b:" + ref.sha256


@dataclass(frozen=True)
class CacheInputs:
    """Everything a cache key is made of (equal inputs, equal keys; any difference, a new key)."""

    cmd: str
    env: Mapping[str, str]
    cwd: str | None
    queue: str
    gpus: int
    version: str
    upstream: Mapping[str, str] = field(default_factory=dict)
    """Parent name -> its output's digest (``output_digest``), for parents with an output."""


def cache_key(inputs: CacheInputs) -> str:
    """The hex SHA-256 of the inputs' canonical JSON (64 characters)."""
    doc = [
        KEY_FORMAT,
        inputs.cmd,
        sorted(inputs.env.items()),
        inputs.cwd,
        inputs.queue,
        inputs.gpus,
        inputs.version,
        sorted(inputs.upstream.items()),
    ]
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def upstream_digests(upstream: Mapping[str, OutputRef] | None) -> dict[str, str] | None:
    """Each parent output's digest, or None if one cannot be keyed (a blob without a hash)."""
    digests: dict[str, str] = {}
    for name, ref in (upstream or {}).items():
        digest = output_digest(ref)
        if digest is None:
            return None
        digests[name] = digest
    return digests


def key_of_task(task: TaskDef, upstream: Mapping[str, OutputRef] | None) -> str | None:
    """The cache key of an attempt of ``task`` given its parents' outputs (a Dispatch's
    ``upstream``), or None when it has no ``cache`` or a parent's output cannot be keyed."""
    if task.cache is None:
        return None
    digests = upstream_digests(upstream)
    if digests is None:
        return None
    inputs = CacheInputs(
        cmd=task.cmd,
        env=task.env,
        cwd=task.cwd,
        queue=task.queue,
        gpus=task.gpus or 0,
        version=task.cache.version,
        upstream=digests,
    )
    return cache_key(inputs)
