"""What each identity's storage calls used: the evidence ``make rbac-check`` checks infra/
against (no role the code needs is missing, no role is granted that the code never uses) and
docs/permissions.md is generated from.

One ``Use`` per distinct (identity, port method, REST operation, scope, grants, caller); with a
file, each new one is appended to it as a JSON line as it happens, so the processes of one run
(the app, workers) share one record.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from shared.storage.rbac.model import Grant
from shared.storage.rbac.operations import RestOperation

_PLUMBING = ("shared.storage", "asyncio", "functools", "contextlib")
"""Modules between a storage call and the code that made it."""


@dataclass(frozen=True)
class Use:
    """One kind of storage call an identity made, and the assignments that allowed it."""

    identity: str
    call: str
    """The port method (``cache.get``)."""
    operation: str
    """The REST operation (``Get Blob``)."""
    scope: str
    """The narrowest scope of the model that holds the resource (``container {prefix}-cache``)."""
    grants: tuple[str, ...]
    """The Bicep symbols of the role assignments that allowed it."""
    caller: str
    """The code that made the call (``shared.coordinator.results:lookup``)."""
    refused: str | None = None
    """Why the call was refused (it is then not made), or None if it was allowed."""


def caller() -> str:
    """The code that made the storage call: the first frame outside the storage plumbing, or,
    where the call chain ends in the event loop (a call gathered as a task of its own), the
    coroutine that task was started with."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", "?"))
        if module.startswith("asyncio"):
            break
        if not module.startswith(_PLUMBING):
            return f"{module}:{frame.f_code.co_name}"
        frame = frame.f_back
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    coro = task.get_coro() if task is not None else None
    code_frame = getattr(coro, "cr_frame", None)
    if code_frame is not None:
        module = str(code_frame.f_globals.get("__name__", "?"))
        if not module.startswith(_PLUMBING):
            return f"{module}:{code_frame.f_code.co_name}"
    return "(a task of its own)"


class UsageLog:
    """The uses seen in this process, appended to ``path`` (if any) as they are first seen."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.uses: dict[Use, None] = {}

    def record(
        self,
        identity: str,
        call: str,
        operation: RestOperation,
        scope: str,
        grants: tuple[Grant, ...],
        refused: str | None = None,
        made_by: str | None = None,
    ) -> None:
        use = Use(
            identity,
            call,
            operation.name,
            scope,
            tuple(g.resource for g in grants),
            made_by or caller(),
            refused,
        )
        if use in self.uses:
            return
        self.uses[use] = None
        if self.path is not None:
            line = json.dumps(asdict(use)) + "\n"
            # One write of one line with O_APPEND: processes appending at once never interleave.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    @property
    def refusals(self) -> list[Use]:
        return [use for use in self.uses if use.refused is not None]


def read_uses(path: str | os.PathLike[str]) -> list[Use]:
    """The uses a run appended to ``path`` (none if it does not exist)."""
    if not Path(path).exists():
        return []
    uses = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            fields = json.loads(line)
            uses.append(Use(**{**fields, "grants": tuple(fields["grants"])}))
    return list(dict.fromkeys(uses))
