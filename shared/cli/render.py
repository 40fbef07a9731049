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
STATE_STYLE: dict[str, str] = {
    TaskState.COMPLETED: "green",
    TaskState.RUNNING: "cyan",
    TaskState.QUEUED: "yellow",
    TaskState.READY: "magenta",
    TaskState.PENDING: "grey50",
    TaskState.FAILED: "bold red",
    TaskState.UPSTREAM_FAILED: "red",
    TaskState.SKIPPED: "grey62",
    TaskState.CANCELLED: "dark_orange",
}
STATUS_STYLE: dict[str, str] = {
    WorkflowStatus.PENDING: "grey50",
    WorkflowStatus.RUNNING: "cyan",
    WorkflowStatus.CANCELLING: "dark_orange",
    WorkflowStatus.COMPLETED: "bold green",
    WorkflowStatus.FAILED: "bold red",
    WorkflowStatus.CANCELLED: "bold dark_orange",
}


def duration(seconds: float | None) -> str:
    """``73`` -> ``1m13s``; ``None`` -> ``-``."""
    if seconds is None or seconds < 0:
        return "-"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def timestamp(epoch: float | None) -> str:
    """A UTC time for tables (``2026-11-29 12:01:02``)."""
    if epoch is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


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


def header(wf: Workflow, pace: Pace | None = None) -> Text:
    """One line: name, id, status, run, progress, pace."""
    total = total_of(wf)
    done = finished_count(wf.counts)
    line = Text.assemble(
        (wf.name or "(unnamed)", "bold"), "  ", (wf.id, "grey62"), "  ", status_text(wf.status)
    )
    if wf.run > 1:
        line.append(f"  run {wf.run}", style="grey62")
    line.append(f"  {done}/{total} tasks finished")
    if pace is not None:
        line.append(f"  elapsed {duration(pace.elapsed_s)}")
        if pace.rate is not None:
            line.append(f"  {pace.rate:.1f} tasks/s")
        if not wf.is_terminal and pace.eta_s is not None:
            line.append(f"  ETA {duration(pace.eta_s)}")
    return line


def state_bars(counts: dict[str, int], total: int, width: int = 40) -> Table:
    """One progress bar per task state that has tasks (just pending while there are none)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", min_width=15)
    table.add_column(width=width)
    table.add_column(justify="right")
    shown: list[str] = [s for s in STATE_ORDER if counts.get(s)] or [TaskState.PENDING]
    extra = sorted(set(counts) - set(STATE_ORDER))
    for state in (*shown, *extra):
        n = counts.get(state, 0)
        bar = ProgressBar(
            total=max(total, 1),
            completed=n,
            width=width,
            complete_style=STATE_STYLE.get(state, "white"),
            finished_style=STATE_STYLE.get(state, "white"),
        )
        table.add_row(Text(state, style=STATE_STYLE.get(state, "")), bar, str(n))
    return table


def queue_counts(tasks: dict[str, TaskInfo]) -> dict[str, Counter[str]]:
    """Queue -> task state -> number of tasks."""
    per_queue: dict[str, Counter[str]] = {}
    for info in tasks.values():
        per_queue.setdefault(info.queue or "?", Counter())[info.state] += 1
    return per_queue


def queue_table(tasks: dict[str, TaskInfo]) -> Table:
    """Per-queue counts: waiting (pending/ready), queued, running, done, failed."""
    table = Table(box=None, padding=(0, 2), header_style="bold")
    for column in ("queue", "waiting", "queued", "running", "done", "failed"):
        table.add_column(column, justify="left" if column == "queue" else "right")
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


def live_view(wf: Workflow, pace: Pace) -> RenderableType:
    """What ``dagq watch`` shows: header, a bar per state, per-queue counts."""
    parts: list[RenderableType] = [header(wf, pace), state_bars(wf.counts, total_of(wf))]
    if wf.tasks:
        parts += [Text(""), queue_table(wf.tasks)]
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


class TaskTable:
    """The task table, laid out for the width it gets: task names and states always whole
    (people copy them into ``dagq logs``); the other columns are dropped, least useful first,
    when the width runs out, and the error column takes what is left."""

    COLUMNS = ("task", "state", "progress", "try", "queue", "started", "took", "exit")
    DROP_ORDER = ("started", "queue", "try", "took", "exit", "progress")

    def __init__(self, items: list[tuple[str, TaskInfo]]) -> None:
        from shared.cli.live_render import progress_text

        self.rows: list[dict[str, str]] = []
        self.last_column = "error" if any(info.error for _, info in items) else "note"
        """``error``, or ``note`` when the column only says where cached results came from."""
        for name, info in items:
            took = None
            if info.started_at is not None and info.finished_at is not None:
                took = info.finished_at - info.started_at
            self.rows.append(
                {
                    "task": name,
                    "state": CACHED if info.cached_from is not None else info.state,
                    "progress": progress_text(info.progress, info.metrics),
                    "try": str(info.attempt or "-"),
                    "queue": info.queue or "-",
                    "started": timestamp(info.started_at)[11:] if info.started_at else "-",
                    "took": duration(took),
                    "exit": "-" if info.exit_code is None else str(info.exit_code),
                    "error": _cached_note(info) or first_line(info.error, limit=200),
                }
            )

    def _width(self, column: str) -> int:
        return max([len(column), *(len(row[column]) for row in self.rows)])

    def layout(self, max_width: int) -> Table:
        columns = list(self.COLUMNS)
        if not any(row["progress"] for row in self.rows):
            columns.remove("progress")  # only while some task reports progress
        widths = {c: self._width(c) for c in (*columns, "error")}
        widths["task"] = min(widths["task"], 60)

        def used() -> int:
            return sum(widths[c] + 1 for c in columns)

        has_errors = any(row["error"] for row in self.rows)
        spare = 12 if has_errors else 0
        for column in self.DROP_ORDER:
            if used() + spare <= max_width:
                break
            if column in columns:
                columns.remove(column)
        error_width = max_width - used() - 1
        show_error = has_errors and error_width >= 8
        table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
        for column in columns:
            right = column in ("try", "took", "exit")
            table.add_column(
                column, no_wrap=True, min_width=widths[column], justify="right" if right else "left"
            )
        if show_error:
            table.add_column(
                self.last_column, no_wrap=True, overflow="ellipsis", max_width=error_width
            )
        for row in self.rows:
            cells: list[str | Text] = [
                Text(row[c], style=STATE_STYLE.get(_shown_state(row[c]), ""))
                if c == "state"
                else row[c]
                for c in columns
            ]
            if show_error:
                cells.append(row["error"])
            table.add_row(*cells)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.layout(options.max_width)


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


def task_table(wf: Workflow, limit: int | None = 50) -> tuple[TaskTable, int]:
    """The task table of ``status`` and how many rows were left out (failed and running tasks
    are listed first when the workflow has more tasks than ``limit``)."""
    items = list(wf.tasks.items())
    hidden = 0
    if limit is not None and len(items) > limit:
        order = {name: i for i, (name, _) in enumerate(items)}
        items.sort(key=lambda kv: (_INTERESTING.get(kv[1].state, 9), order[kv[0]]))
        hidden = len(items) - limit
        items = sorted(items[:limit], key=lambda kv: order[kv[0]])
    return TaskTable(items), hidden


def first_line(text: str | None, limit: int = 80) -> str:
    if not text:
        return ""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def status_view(wf: Workflow, *, limit: int | None = 50) -> RenderableType:
    """What ``dagq status`` prints: header, counts, timestamps and the task table."""
    total = total_of(wf)
    parts: list[RenderableType] = [header(wf)]
    times = Text(f"created {timestamp(wf.created_at)} UTC", style="grey62")
    if wf.finished_at:
        times.append(f"  finished {timestamp(wf.finished_at)} UTC")
        times.append(f"  took {duration(wf.finished_at - (wf.created_at or wf.finished_at))}")
    if wf.cancel_requested and not wf.is_terminal:
        times.append("  cancel requested", style="dark_orange")
    parts += [times, state_bars(wf.counts, total)]
    if wf.error:
        parts.append(Text(f"error: {wf.error}", style="red"))
    if wf.tasks:
        table, hidden = task_table(wf, limit)
        parts += [Text(""), table]
        if hidden:
            parts.append(Text(f"… {hidden} more tasks (use --all to list them)", style="grey62"))
    return Group(*parts)


def list_table(items: Iterable[WorkflowSummary]) -> Table:
    """The table of ``dagq list``."""
    items = list(items)
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
    # Ids are what people copy into the next command: never cut them short.
    id_width = max((len(item.id) for item in items), default=2)
    name_width = min(max((len(item.name) for item in items), default=4), 40)
    table.add_column("id", no_wrap=True, min_width=id_width)
    table.add_column("name", no_wrap=True, min_width=name_width, overflow="ellipsis")
    table.add_column("status", no_wrap=True, min_width=10)
    table.add_column("done", no_wrap=True, justify="right")
    table.add_column("created (UTC)", no_wrap=True, min_width=16)
    table.add_column("took", no_wrap=True, justify="right", min_width=6)
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
