"""The earlier attempts of a task, kept in the workflow state after a retry or a rerun.

When a task's attempt is replaced (a retry dispatches the next one, an event adopts a newer one, a
rerun reopens the task), ``archive`` keeps what the attempt reported: its number, outcome, times,
exit code, error, worker and whether it left a log. The state stays small:

- only tasks that ran more than once have a history (a workflow without retries keeps none, so
  its state blob is byte for byte what it was);
- a task keeps its ``KEPT_PER_TASK`` most recent earlier attempts; the oldest is dropped first;
- each kept attempt keeps the last ``ERROR_CHARS`` characters of its error (the full text of the
  last failure stays in the task's own ``error``);
- a workflow keeps at most ``KEPT_PER_WORKFLOW`` earlier attempts in all; past that, earlier
  attempts are no longer kept.

An attempt not kept is not lost: attempt numbers run 1, 2, 3... per task, its log stays in the
outputs container under its number, and the API lists it with ``kept: false``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from shared.limits import KEPT_ATTEMPT_ERROR_CHARS as ERROR_CHARS
from shared.limits import KEPT_ATTEMPTS_PER_TASK as KEPT_PER_TASK
from shared.limits import KEPT_ATTEMPTS_PER_WORKFLOW as KEPT_PER_WORKFLOW


@dataclass(frozen=True, slots=True)
class PastAttempt:
    """One earlier attempt of a task, as it ended (times in integer milliseconds)."""

    attempt: int
    code: int
    """The task's state code when the attempt ended (see ``shared.state.TASK_STATES``)."""
    queued_ms: int | None
    started_ms: int | None
    finished_ms: int | None
    exit_code: int | None
    error: str | None
    worker: str | None
    has_log: bool

    def to_json(self) -> list[Any]:
        """The compact form in the state blob's meta."""
        return [
            self.attempt, self.code, self.queued_ms, self.started_ms, self.finished_ms,
            self.exit_code, self.error, self.worker, int(self.has_log),
        ]  # fmt: skip

    @classmethod
    def from_json(cls, raw: list[Any]) -> PastAttempt:
        """``to_json`` read back (the codec turns a malformed entry into a CodecError)."""
        attempt, code, queued, started, finished, exit_code, error, worker, has_log = raw

        def opt_int(v: Any) -> int | None:
            return None if v is None else int(v)

        return cls(
            int(attempt), int(code), opt_int(queued), opt_int(started), opt_int(finished),
            opt_int(exit_code), None if error is None else str(error)[-ERROR_CHARS:],
            None if worker is None else str(worker), bool(has_log),
        )  # fmt: skip


class AttemptColumns(Protocol):
    """The columns of a workflow's runtime state that ``archive`` reads and keeps (the engine's
    ``RuntimeState`` has them; this module does not import it, which imports this one)."""

    attempt: list[int]
    queued_ms: list[int | None]
    started_ms: list[int | None]
    finished_ms: list[int | None]
    exit_code: list[int | None]
    errors: dict[int, str]
    workers: dict[int, str]
    log_blob: dict[int, str]
    history: dict[int, list[PastAttempt]]
    n_history: int


def archive(state: AttemptColumns, i: int, code: int) -> None:
    """Keep the current attempt of task ``i`` (which ended in state ``code``) before it is
    replaced; a task that never ran has nothing to keep."""
    attempt = state.attempt[i]
    if attempt <= 0:
        return
    kept = state.history.setdefault(i, [])
    if kept and kept[-1].attempt >= attempt:
        return  # already kept (the same attempt replaced twice)
    if state.n_history >= KEPT_PER_WORKFLOW and len(kept) == 0:
        del state.history[i]
        return
    error = state.errors.get(i)
    prefix = f"attempt {attempt} failed: "
    if error is not None and error.startswith(prefix):
        error = error[len(prefix) :]
    kept.append(
        PastAttempt(
            attempt=attempt,
            code=code,
            queued_ms=state.queued_ms[i],
            started_ms=state.started_ms[i],
            finished_ms=state.finished_ms[i],
            exit_code=state.exit_code[i],
            error=None if error is None else error[-ERROR_CHARS:],
            worker=state.workers.get(i),
            has_log=i in state.log_blob,
        )
    )
    state.n_history += 1
    if len(kept) > KEPT_PER_TASK or state.n_history > KEPT_PER_WORKFLOW:
        del kept[0]
        state.n_history -= 1
