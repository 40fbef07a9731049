"""The bounded field types of queue messages: every field of a message is checked where it is
decoded (``shared.messages``), so nothing a message says can overflow the state codec, name an
unsafe blob or carry unbounded text."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationError

from shared.errors import MessageError
from shared.limits import MAX_COUNTER, MAX_TIMESTAMP_S, MAX_WORKER_CHARS
from shared.names import (
    ResourceNames,
    queue_name_problem,
    safe_name_problem,
    workflow_id_problem,
)


def _checked(problem: Callable[[str], str | None]) -> Callable[[str], str]:
    def check(value: str) -> str:
        reason = problem(value)
        if reason:
            raise ValueError(reason)
        return value

    return check


WorkflowId = Annotated[str, Field(max_length=64), AfterValidator(_checked(workflow_id_problem))]
TaskName = Annotated[str, Field(max_length=128), AfterValidator(_checked(safe_name_problem))]
QueueName = Annotated[str, Field(max_length=64), AfterValidator(_checked(queue_name_problem))]
Attempt = Annotated[int, Field(ge=1, le=MAX_COUNTER)]
Incarnation = Annotated[int, Field(ge=1, le=MAX_COUNTER)]
"""Which workflow of an id a message belongs to: drawn at submit
(``shared.api.service.new_incarnation``), so a purged id submitted again is another incarnation;
None in messages of older deployments."""
Timestamp = Annotated[float, Field(ge=0, le=MAX_TIMESTAMP_S, allow_inf_nan=False)]
"""Seconds since the epoch, finite (no NaN or Infinity) and within 1970..2286."""
WorkerName = Annotated[
    str, Field(min_length=1, max_length=MAX_WORKER_CHARS, pattern=r"^[^\x00-\x1f\x7f]+$")
]
"""A worker's name: printable (no control characters), at most MAX_WORKER_CHARS."""
UpstreamDigest = Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
"""``shared.messages.upstream_digest`` of the parents' outputs an attempt was sent with."""


def message_text(raw: str | bytes) -> str:
    """A message's text (MessageError if its bytes are not UTF-8)."""
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MessageError(f"message is not UTF-8 text: {exc}") from None
    return raw


def explain(exc: ValidationError) -> str:
    """The first few problems of a message that does not validate, one line."""
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<message>"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


_ATTEMPT_SEGMENT = re.compile(r"[1-9][0-9]{0,9}")


def parent_output_blob(
    workflow_id: str, parent: str, blob: str | None, incarnation: int | None = None
) -> str | None:
    """Where a parent's output is stored (None: inline), named from validated ids: ``blob`` (an
    output ref's) must be the parent's conventional output blob of one of its attempts — under
    ``incarnation`` (the message's), or in the flat layout of workflows from before state
    version 6 — else MessageError. The name returned is built, not taken from the ref."""
    problem = safe_name_problem(parent)
    if problem:
        raise MessageError(f"upstream parent: {problem}")
    if blob is None:
        return None
    suffix = "/output.json"
    layouts = (None,) if incarnation is None else (incarnation, None)
    for inc in layouts:
        prefix = ResourceNames.attempt_prefix(workflow_id, parent, 1, inc).removesuffix("1/")
        segment = blob[len(prefix) : -len(suffix)] if blob.startswith(prefix) else ""
        if blob.endswith(suffix) and _ATTEMPT_SEGMENT.fullmatch(segment):
            attempt = int(segment)
            if attempt <= MAX_COUNTER:
                return ResourceNames.output_blob(workflow_id, parent, attempt, inc)
    expected = ResourceNames.output_blob(workflow_id, parent, 1, layouts[0])
    raise MessageError(
        f"the output of parent {parent!r} names blob {blob[:200]!r}, which is not one of its"
        f" output blobs ({expected.replace('/1/output.json', '/<attempt>/output.json')})"
    )
