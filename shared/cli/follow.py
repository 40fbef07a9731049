"""Following a workflow to its end: the live view (rich) on a terminal, plain lines elsewhere.

Used by ``dagq watch``, ``submit --wait``, ``cancel --wait`` and ``retry --wait``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import deque
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from shared.cli import render, style
from shared.cli.exitcodes import for_status
from shared.cli.live_render import progress_lines
from shared.cli.unserved import UnservedQueues
from shared.client import Client, Workflow
from shared.states import TaskState, WorkflowStatus

MAX_TASKS_FOR_QUEUE_VIEW = 2000
"""Larger workflows are watched without their task table (no per-queue counts): polling a
table of tens of thousands of tasks every second would cost more than the view is worth."""


class PaceMeter:
    """Completions per second over a sliding window, and the ETA that follows from it."""

    def __init__(self, window_s: float = 15.0) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def observe(self, wf: Workflow, *, now: float, wall: float) -> render.Pace:
        """Record a snapshot taken at monotonic time ``now`` (wall clock ``wall``)."""
        finished = render.finished_count(wf.counts)
        if self._samples and finished < self._samples[-1][1]:
            self._samples.clear()  # a rerun reopened tasks: start measuring afresh
        self._samples.append((now, finished))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()
        rate = None
        first_t, first_n = self._samples[0]
        if now - first_t >= 0.5:
            rate = (finished - first_n) / (now - first_t)
        remaining = render.total_of(wf) - finished
        eta = remaining / rate if rate and rate > 0 else None
        return render.Pace(elapsed_s=render.elapsed_of(wf, wall), rate=rate, eta_s=eta)


def follow(
    client: Client,
    workflow_id: str,
    *,
    console: Console,
    interval_s: float = 1.0,
    timeout_s: float | None = None,
    min_run: int = 1,
    since: float | None = None,
    pace: bool = True,
) -> Workflow:
    """Show the workflow until it ends (its run ``min_run`` or later); return the final snapshot.
    Snapshots of an earlier run (before the coordinator applied a retry) are not shown; ``since``
    (a wall time: the retry) is where the elapsed time counts from; ``pace=False`` leaves out the
    rate and ETA (a cancel's pace says nothing). Raises WaitTimeoutError after ``timeout_s``."""
    meter = PaceMeter()
    unserved = UnservedQueues(client, lambda text: print(text, file=sys.stderr))

    def measure(wf: Workflow) -> render.Pace:
        wall = time.time()
        got = meter.observe(wf, now=time.monotonic(), wall=wall)
        if since is not None:
            end = wf.finished_at if (wf.is_terminal and wf.finished_at) else wall
            got = dataclasses.replace(got, elapsed_s=max(0.0, end - since))
        return got if pace else dataclasses.replace(got, rate=None, eta_s=None)

    # Per-queue counts and running tasks' progress need the task table: fetched while it is small
    # enough to poll.
    with_tasks = client.get(workflow_id, tasks=False).total <= MAX_TASKS_FOR_QUEUE_VIEW
    if console.is_terminal:
        with Live(console=console, refresh_per_second=4, transient=False) as live:

            def show(wf: Workflow) -> None:
                unserved.check(wf)
                if wf.run >= min_run:
                    live.update(render.live_view(wf, measure(wf)))

            return client.wait(
                workflow_id,
                on_update=show,
                interval_s=interval_s,
                timeout_s=timeout_s,
                tasks=with_tasks,
                min_run=min_run,
            )

    last: list[Any] = [None, None]

    def print_changes(wf: Workflow) -> None:
        unserved.check(wf)
        if wf.run < min_run:
            return  # the retry is not applied yet: its status is stale
        pace = measure(wf)
        key = (wf.status, wf.run, tuple(sorted(wf.counts.items())))
        # A running task's report is printed again when its progress passes a tenth.
        reported = tuple(
            (name, None if t.progress is None else int(t.progress * 10))
            for name, t in wf.tasks.items()
            if t.state == TaskState.RUNNING and (t.progress is not None or t.metrics)
        )
        if key != last[0] or reported != last[1]:
            last[0], last[1] = key, reported
            console.print(render.plain_progress(wf, pace), soft_wrap=True, highlight=False)
            for line in progress_lines(wf, time.time()) if reported else ():
                console.print(line, soft_wrap=True, highlight=False)

    return client.wait(
        workflow_id,
        on_update=print_changes,
        interval_s=interval_s,
        timeout_s=timeout_s,
        tasks=with_tasks,
        min_run=min_run,
    )


def follow_to_end(
    client: Client,
    workflow_id: str,
    options: argparse.Namespace,
    *,
    console: Console,
    min_run: int = 1,
    since: float | None = None,
    pace: bool = True,
) -> int:
    """Follow the workflow until it ends, then print its final state as JSON (``--json``) or how
    it ended; return the exit code of its status (the tail of every ``--wait``). ``options`` are
    the command's, with ``--json`` and the follow options (``--interval``, ``--timeout``)."""
    wf = follow(
        client,
        workflow_id,
        console=console,
        interval_s=options.interval,
        timeout_s=options.timeout,
        min_run=min_run,
        since=since,
        pace=pace,
    )
    final = client.get(workflow_id)
    if options.json:
        print(render.dumps(final.model_dump(mode="json")))
        return for_status(wf.status)
    return conclude(final, console, since=since)


def conclude(wf: Workflow, console: Console, *, since: float | None = None) -> int:
    """Print how the workflow ended and what to do next; return the matching exit code. The
    time it took counts from ``since`` when given (a retry), else from the submission."""
    code = for_status(wf.status)
    elapsed = render.elapsed_of(wf, time.time())
    if since is not None:
        elapsed = max(0.0, (wf.finished_at or time.time()) - since)
    took = style.duration(elapsed)
    console.print(
        Text.assemble(
            f"workflow {wf.id} ",
            (str(wf.status), "bold"),
            f" after {took} ({render.finished_count(wf.counts)}/{render.total_of(wf)} tasks"
            " finished)",
        ),
        highlight=False,
    )
    if wf.status == WorkflowStatus.FAILED:
        # What the user acts on (a name, a path in an error, a command) is never cut nor wrapped
        # by rich (soft_wrap): a terminal wraps it, a log keeps it on one line.
        failed = [name for name, info in wf.tasks.items() if info.state == TaskState.FAILED]
        for name in failed[:5]:
            error = style.first_line(wf.tasks[name].error, limit=None)
            console.print(f"  failed: {name}  {error}", highlight=False, soft_wrap=True)
        ran = [name for name in failed if wf.tasks[name].started_at is not None]
        if ran:  # a task that never ran has no log: its error above says why
            console.print(
                f"  see a log: dagq logs {wf.id} {ran[0]}", highlight=False, soft_wrap=True
            )
        console.print(
            f"  rerun from the failure: dagq retry {wf.id} --wait", highlight=False, soft_wrap=True
        )
    return code
