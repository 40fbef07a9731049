"""Waiting for a workflow to finish: poll, report each snapshot, ride out transient errors."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.client.errors import ApiError, ApiUnreachableError, WaitTimeoutError

if TYPE_CHECKING:
    from shared.client.models import Workflow

UpdateCallback = Callable[["Workflow"], None]
"""Called with every snapshot ``wait`` fetches."""

MAX_PAUSE_S = 15.0
"""The longest pause between tries after transient errors."""


def wait_for(
    get: Callable[[], Workflow],
    workflow_id: str,
    *,
    on_update: UpdateCallback | None = None,
    interval_s: float = 1.0,
    timeout_s: float | None = None,
    min_run: int = 1,
    max_failures: int = 5,
) -> Workflow:
    """Call ``get`` until the workflow is terminal in run ``min_run`` or later; see
    ``Client.wait``."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    failures = 0
    answered = False
    while True:
        try:
            workflow = get()
        except (ApiUnreachableError, ApiError) as exc:
            # Errors are ridden out once the API has answered (a restart under a long wait); an
            # API never reached (the stack is down, a wrong URL) is reported at once, as
            # `dagq logs -f` does.
            transient = (
                (not exc.lasting or answered)
                if isinstance(exc, ApiUnreachableError)
                else (exc.status == 429 or exc.status >= 500)
            )
            failures += 1
            if not transient or failures > max_failures:
                raise
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"workflow {workflow_id}: no answer from the API for the last"
                    f" {failures} tries, and {timeout_s:g} s have passed"
                ) from exc
            time.sleep(min(interval_s * 2**failures, MAX_PAUSE_S))
            continue
        failures, answered = 0, True
        if on_update is not None:
            on_update(workflow)
        if workflow.is_terminal and workflow.run >= min_run:
            return workflow
        if deadline is not None and time.monotonic() >= deadline:
            raise WaitTimeoutError(
                f"workflow {workflow_id} is still {workflow.status} after {timeout_s:g} s"
            )
        time.sleep(interval_s)
