"""The ``dagq`` command's exit codes: scripts can rely on these."""

from __future__ import annotations

from enum import IntEnum

from shared.states import WorkflowStatus


class ExitCode(IntEnum):
    """What the process exit status of a ``dagq`` command means."""

    OK = 0
    """The command succeeded; for ``submit --wait`` / ``watch``: the workflow completed."""
    FAILED = 1
    """The workflow failed (``submit --wait``, ``watch``)."""
    USAGE = 2
    """Bad command line, unreadable file, or a definition the API (or ``validate``) rejected."""
    NOT_FOUND = 3
    """No such workflow, or no such task (or it has no log / output yet)."""
    API_ERROR = 4
    """The API could not be reached, refused the request (e.g. 409 conflict) or failed."""
    CANCELLED = 5
    """The workflow was cancelled (``submit --wait``, ``watch``)."""
    TIMEOUT = 6
    """``--timeout`` passed before the workflow finished (it keeps running)."""
    INTERRUPTED = 130
    """Interrupted with Ctrl-C (the workflow keeps running; only the command stopped)."""


def for_status(status: str) -> ExitCode:
    """The exit code that reports a workflow's terminal status."""
    codes: dict[str, ExitCode] = {
        WorkflowStatus.COMPLETED: ExitCode.OK,
        WorkflowStatus.FAILED: ExitCode.FAILED,
        WorkflowStatus.CANCELLED: ExitCode.CANCELLED,
    }
    return codes.get(status, ExitCode.API_ERROR)
