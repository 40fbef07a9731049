"""The client's methods for a task's attempts and (live) logs, mixed into ``shared.client.Client``.

with Client() as dagq:
    for attempt in dagq.attempts(wf_id, "train").items: ...
    text = dagq.logs(wf_id, "train", attempt=1)
    for chunk in dagq.follow_log(wf_id, "train"):   # until the attempt ends
        sys.stdout.buffer.write(chunk)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from shared.client.transport import segment
from shared.views import AttemptList

if TYPE_CHECKING:
    import httpx

_M = TypeVar("_M", bound=BaseModel)

FOLLOW_INTERVAL_S = 2.0
"""How often ``follow_log`` asks for more while the log grows (the worker appends every 5 s
while a task is young, up to every 20 s once it is older: docs/worker.md)."""


@dataclass(frozen=True)
class LogPiece:
    """Part of one attempt's log, as ``GET .../log`` answered it."""

    attempt: int
    data: bytes
    offset: int
    size: int
    """The log's size in storage when read."""
    growing: bool
    """The attempt has not ended: more may come."""

    @property
    def next_offset(self) -> int:
        return self.offset + len(self.data)


class TaskLogsMixin:
    """Methods of ``Client`` for a task's attempts and logs."""

    if TYPE_CHECKING:

        def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M: ...

        def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response: ...

    def attempts(self, workflow_id: str, task: str) -> AttemptList:
        """Every attempt of a task, oldest first: number, state, worker, times, exit code,
        error, log (earlier attempts stay readable after retries and reruns)."""
        path = f"/workflows/{segment(workflow_id)}/tasks/{segment(task)}/attempts"
        return self._model(AttemptList, "GET", path)

    def log_piece(
        self, workflow_id: str, task: str, *, attempt: int | None = None, offset: int = 0
    ) -> LogPiece:
        """What exists of an attempt's log from byte ``offset`` (the latest attempt with a log
        unless ``attempt`` is given), and whether it may still grow."""
        params: dict[str, str | int] = {"offset": offset}
        if attempt is not None:
            params["attempt"] = attempt
        path = f"/workflows/{segment(workflow_id)}/tasks/{segment(task)}/log"
        response = self._request("GET", path, params=params)
        headers = response.headers
        return LogPiece(
            attempt=int(headers.get("x-dagq-attempt") or attempt or 0),
            data=response.content,
            offset=offset,
            size=int(headers.get("x-dagq-log-size") or offset + len(response.content)),
            growing=headers.get("x-dagq-log-growing") == "true",
        )

    def logs(self, workflow_id: str, task: str, *, attempt: int | None = None) -> str:
        """The combined stdout and stderr of an attempt (default: the latest with a log), as it
        is now."""
        data = b"".join(piece.data for piece in self.log_pieces(workflow_id, task, attempt=attempt))
        return data.decode("utf-8", errors="replace")

    def follow_log(
        self, workflow_id: str, task: str, *, attempt: int | None = None
    ) -> Iterator[LogPiece]:
        """Each new piece of an attempt's log until the attempt ends (``dagq logs -f``)."""
        return self.log_pieces(workflow_id, task, attempt=attempt, follow=True)

    def log_pieces(
        self,
        workflow_id: str,
        task: str,
        *,
        attempt: int | None = None,
        follow: bool = False,
        interval_s: float = FOLLOW_INTERVAL_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Iterator[LogPiece]:
        """The pieces of an attempt's log that exist now; with ``follow``, then each new one
        until the attempt ends (polling every ``interval_s``)."""
        offset = 0
        while True:
            piece = self.log_piece(workflow_id, task, attempt=attempt, offset=offset)
            # Stay on this attempt (a retry starts another log); 0: none started yet, so ask
            # for the latest again.
            attempt = piece.attempt or None
            if piece.data:
                yield piece
            offset = piece.next_offset
            if offset < piece.size and piece.data:
                continue  # more is there already (answers are at most 4 MiB)
            # An empty answer short of the size it states is no progress: never ask again at
            # once (a reader that did asked 200 times a second).
            if not (follow and piece.growing):
                return
            sleep(interval_s)
