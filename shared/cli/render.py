"""How the CLI shows workflows: tables, per-state progress bars, per-queue counts, plain lines.

Pure functions from client results to rich renderables or strings, so the live view, ``status``
and the tests share one rendering.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from shared.cli.fit_table import Cell, Column, FitTable, Phrases
from shared.cli.live_render import progress_text, took_text
from shared.cli.params_render import params_line
from shared.cli.style import STATE_STYLE, duration, first_line, timestamp
from shared.client import TaskInfo, Workflow, WorkflowSummary
from shared.states import TERMINAL_TASK_STATES, TaskState, WorkflowStatus

STATE_ORDER: tuple[str, ...] = (
    TaskState.COMPLETED,
    TaskState.RUNNING,
    TaskState.QUEUED,
    TaskState.READY,
    TaskState.PENDING,
    TaskState.FAILED,
    TaskState.UPSTREAM_FAILED,
    TaskState.SKIPPED,
    TaskState.CANCELLED,
)
"""Task states in the order the views list them (every state, once)."""

CACHED = "cached"
"""What the task table shows for a task that completed from the result cache (it did not run)."""
STATUS_STYLE: dict[str, str] = {
    WorkflowStatus.PENDING: "grey50",
    WorkflowStatus.RUNNING: "cyan",
    WorkflowStatus.CANCELLING: "dark_orange",
    WorkflowStatus.COMPLETED: "bold green",
    WorkflowStatus.FAILED: "bold red",
    WorkflowStatus.CANCELLED: "bold dark_orange",
}


def dumps(value: object) -> str:
    """Stable, readable JSON for ``--json`` output."""
    return json.dumps(value, indent=2, sort_keys=False, default=str)


@dataclass(frozen=True)
class Pace:
    """How fast a workflow is going, as measured by the watcher."""

    elapsed_s: float | None
    rate: float | None
    """Tasks reaching a terminal state per second, over the recent window."""
    eta_s: float | None


def elapsed_of(wf: Workflow, now: float) -> float:
    """Seconds since submission (until the end, once the workflow finished)."""
    end = wf.finished_at if (wf.is_terminal and wf.finished_at) else now
    return max(0.0, end - wf.created_at)


def finished_count(counts: dict[str, int]) -> int:
    return sum(n for state, n in counts.items() if state in TERMINAL_TASK_STATES)


def total_of(wf: Workflow) -> int:
    return wf.total or sum(wf.counts.values()) or len(wf.tasks)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def header(wf: Workflow, pace: Pace | None = None) -> Phrases:
    """One line (wrapped between its phrases): name, id, status, run, progress, pace."""
    total = total_of(wf)
    done = finished_count(wf.counts)
    line = Phrases(
        Text(wf.name or "(unnamed)", "bold"), Text(wf.id, "grey62"), status_text(wf.status)
    )
    if wf.run > 1:
        line.append(Text(f"run {wf.run}", style="grey62"))
    line.append(f"{done}/{total} tasks finished")
    if pace is not None:
        line.append(f"elapsed {duration(pace.elapsed_s)}")
        if pace.rate is not None:
            line.append(f"{pace.rate:.1f} tasks/s")
        if not wf.is_terminal and pace.eta_s is not None:
            line.append(f"ETA {duration(pace.eta_s)}")
    return line


class StateBars:
    """One progress bar per task state that has tasks (just pending while there are none); the
    bars narrow to leave the counts whole on a narrow terminal."""

    def __init__(self, counts: dict[str, int], total: int, width: int = 40) -> None:
        shown: list[str] = [s for s in STATE_ORDER if counts.get(s)] or [TaskState.PENDING]
        extra = sorted(set(counts) - set(STATE_ORDER))
        self.rows = [(state, counts.get(state, 0)) for state in (*shown, *extra)]
        self.total = total
        self.width = width

    def layout(self, max_width: int) -> Table:
        label_width = max(15, *(len(state) for state, _ in self.rows))
        count_width = max(len(str(n)) for _, n in self.rows)
        width = max(5, min(self.width, max_width - label_width - count_width - 2))
        table = Table.grid(padding=(0, 1))
        table.add_column(justify="right", min_width=label_width, no_wrap=True)
        table.add_column(width=width)
        table.add_column(justify="right", min_width=count_width, no_wrap=True)
        for state, n in self.rows:
            style = STATE_STYLE.get(state, "white")
            bar = ProgressBar(
                total=max(self.total, 1),
                completed=n,
                width=width,
                complete_style=style,
                finished_style=style,
            )
            table.add_row(Text(state, style=STATE_STYLE.get(state, "")), bar, str(n))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.layout(options.max_width)


def state_bars(counts: dict[str, int], total: int, width: int = 40) -> StateBars:
    """One progress bar per task state that has tasks (see ``StateBars``)."""
    return StateBars(counts, total, width)


def queue_counts(tasks: dict[str, TaskInfo]) -> dict[str, Counter[str]]:
    """Queue -> task state -> number of tasks."""
    per_queue: dict[str, Counter[str]] = {}
    for info in tasks.values():
        per_queue.setdefault(info.queue or "?", Counter())[info.state] += 1
    return per_queue


QUEUE_COLUMNS = (
    Column("queue", "name", floor=12),
    *(Column(c, right=True) for c in ("waiting", "queued", "running", "done", "failed")),
)


def queue_table(tasks: dict[str, TaskInfo]) -> FitTable:
    """Per-queue counts: waiting (pending/ready), queued, running, done, failed."""
    table = FitTable(QUEUE_COLUMNS, gap=2)
    for queue, counts in sorted(queue_counts(tasks).items()):
        failed = (
            counts[TaskState.FAILED]
            + counts[TaskState.UPSTREAM_FAILED]
            + counts[TaskState.CANCELLED]
        )
        done = counts[TaskState.COMPLETED] + counts[TaskState.SKIPPED]
        table.add_row(
            queue,
            str(counts[TaskState.PENDING] + counts[TaskState.READY]),
            str(counts[TaskState.QUEUED]),
            str(counts[TaskState.RUNNING]),
            Text(str(done), style="green" if done else ""),
            Text(str(failed), style="red" if failed else ""),
        )
    return table


def live_view(wf: Workflow, pace: Pace, *, now: float | None = None) -> RenderableType:
    """What ``dagq watch`` shows: header, a bar per state, per-queue counts, and the running
    tasks with what they report (progress, metrics, ETA)."""
    from shared.cli.live_render import running_table

    parts: list[RenderableType] = [header(wf, pace), state_bars(wf.counts, total_of(wf))]
    if wf.tasks:
        parts += [Text(""), queue_table(wf.tasks)]
        running = running_table(wf, time.time() if now is None else now)
        if running is not None:
            parts += [Text(""), running]
    elif total_of(wf) > 0:
        parts.append(Text("(per-queue counts are shown for workflows of up to 2,000 tasks)",
                          style="grey62"))  # fmt: skip
    if wf.error:
        parts.append(Text(f"error: {wf.error}", style="red"))
    return Group(*parts)


def plain_progress(wf: Workflow, pace: Pace) -> str:
    """One line of progress for logs and non-terminals."""
    counts = wf.counts
    states = ", ".join(f"{s} {counts[s]}" for s in STATE_ORDER if counts.get(s))
    line = f"{wf.id} {wf.status}: {finished_count(counts)}/{total_of(wf)} finished"
    if states:
        line += f" ({states})"
    line += f"; elapsed {duration(pace.elapsed_s)}"
    if pace.rate is not None:
        line += f", {pace.rate:.1f} tasks/s"
    if not wf.is_terminal and pace.eta_s is not None:
        line += f", ETA {duration(pace.eta_s)}"
    return line


_INTERESTING: dict[str, int] = {
    TaskState.FAILED: 0,
    TaskState.UPSTREAM_FAILED: 1,
    TaskState.RUNNING: 2,
    TaskState.QUEUED: 3,
    TaskState.CANCELLED: 4,
}


TASK_COLUMNS = (
    Column("task", "name", floor=60),  # people copy names into ``dagq logs``: whole up to 60
    Column("state"),
    Column("progress", drop=2),
    Column("try", right=True, drop=5),
    Column("queue", "name", drop=6, floor=8),
    Column("started", drop=7),
    Column("took", right=True, drop=4),
    Column("exit", right=True, drop=3),
)
"""The task table's columns; the last one (``error``, or ``note``) is free text."""


def task_rows(items: list[tuple[str, TaskInfo]]) -> FitTable:
    """The task table: names and states kept, the other columns left out, least useful first
    (started, queue, try, took, exit, progress), when the width runs out."""
    last = Column("error" if any(info.error for _, info in items) else "note", "text", drop=1)
    notes = [_cached_note(info) or first_line(info.error, limit=200) for _, info in items]
    progress = [progress_text(info.progress, info.metrics) for _, info in items]
    columns = [c for c in TASK_COLUMNS if c.header != "progress" or any(progress)]
    table = FitTable([*columns, *([last] if any(notes) else [])])
    now = time.time()
    for (name, info), shown, note in zip(items, progress, notes, strict=True):
        state = CACHED if info.cached_from is not None else info.state
        cells: dict[str, Cell] = {
            "task": name,
            "state": Text(state, style=STATE_STYLE.get(_shown_state(state), "")),
            "progress": shown,
            "try": str(info.attempt or "-"),
            "queue": info.queue or "-",
            "started": timestamp(info.started_at)[11:] if info.started_at else "-",
            "took": took_text(info.state, info.started_at, info.finished_at, now),
            "exit": "-" if info.exit_code is None else str(info.exit_code),
            last.header: note,
        }
        table.add_row(*(cells[c.header] for c in table.columns))
    return table


def _shown_state(text: str) -> str:
    """The state whose style a state cell takes (a cached task looks completed)."""
    return TaskState.COMPLETED if text == CACHED else text


def _cached_note(info: TaskInfo) -> str:
    """Where a cached task's result came from (shown in the last column)."""
    origin = info.cached_from
    if origin is None:
        return ""
    saved = duration(origin.run_s)
    return f"from {origin.workflow_id} {origin.task} try {origin.attempt} (saved {saved})"


def task_table(wf: Workflow, limit: int | None = 50) -> tuple[FitTable, int]:
    """The task table of ``status`` and how many rows were left out (failed and running tasks
    are listed first when the workflow has more tasks than ``limit``)."""
    items = list(wf.tasks.items())
    hidden = 0
    if limit is not None and len(items) > limit:
        order = {name: i for i, (name, _) in enumerate(items)}
        items.sort(key=lambda kv: (_INTERESTING.get(kv[1].state, 9), order[kv[0]]))
        hidden = len(items) - limit
        items = sorted(items[:limit], key=lambda kv: order[kv[0]])
    return task_rows(items), hidden


def status_view(wf: Workflow, *, limit: int | None = 50) -> RenderableType:
    """What ``dagq status`` prints: header, counts, timestamps and the task table."""
    total = total_of(wf)
    parts: list[RenderableType] = [header(wf)]
    times = Phrases(Text(f"created {timestamp(wf.created_at)} UTC", style="grey62"))
    if wf.finished_at:
        times.append(Text(f"finished {timestamp(wf.finished_at)} UTC", style="grey62"))
        took = duration(wf.finished_at - (wf.created_at or wf.finished_at))
        times.append(Text(f"took {took}", style="grey62"))
    if wf.cancel_requested and not wf.is_terminal:
        times.append(Text("cancel requested", style="dark_orange"))
    parts.append(times)
    params = params_line(wf.params)  # (issue 29: the run's parameters)
    if params is not None:
        parts.append(params)
    parts.append(state_bars(wf.counts, total))
    if wf.error:
        parts.append(Text(f"error: {wf.error}", style="red"))
    if wf.notify:  # issue 29: who is told when it ends
        hooks = "; ".join(
            f"{n.host} ({', '.join(n.events)}{', ' + n.format if n.format != 'json' else ''}"
            f"{', signed' if n.signed else ''})"
            for n in wf.notify
        )
        parts.append(Text(f"notifies {hooks}", style="grey62"))
    if wf.tasks:
        table, hidden = task_table(wf, limit)
        parts += [Text(""), table]
        if hidden:
            parts.append(Text(f"… {hidden} more tasks (use --all to list them)", style="grey62"))
    return Group(*parts)


LIST_COLUMNS = (
    Column("id"),  # what people copy into the next command: never cut
    Column("name", "name", floor=20),
    Column("status"),
    Column("done", right=True),
    Column("created (UTC)", drop=2),
    Column("took", right=True, drop=1),
)


def list_table(items: Iterable[WorkflowSummary]) -> FitTable:
    """The table of ``dagq list``."""
    table = FitTable(LIST_COLUMNS)
    for item in items:
        total = item.total or sum(item.counts.values())
        took = None
        if item.created_at is not None:
            took = (item.finished_at or time.time()) - item.created_at
        table.add_row(
            item.id,
            item.name,
            status_text(item.status),
            f"{finished_count(item.counts)}/{total}",
            timestamp(item.created_at)[:16],
            duration(took),
        )
    return table


def json_compact(value: object) -> str:
    """One-line JSON."""
    return json.dumps(value, separators=(",", ":"), default=str)
