"""How the CLI shows what tasks are doing and did: progress, metrics, attempts, GPU use."""

from __future__ import annotations

import time
from collections.abc import Mapping

from rich.text import Text

from shared.cli.fit_table import Column, FitTable
from shared.cli.style import STATE_STYLE, duration, first_line, timestamp
from shared.client import TaskInfo, Workflow
from shared.states import TaskState
from shared.views import AttemptList, GpuView

MAX_METRICS_SHOWN = 3
MAX_RUNNING_SHOWN = 10
"""Running tasks ``dagq watch`` lists (the ones that report progress first)."""
ETA_METRIC = "eta_s"
"""A metric a task may report: its own estimate of the seconds it has left."""


def number(value: float) -> str:
    """A metric value, short but never cut: 12, 0.21, 1.5e-05."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def progress_text(
    progress: float | None, metrics: Mapping[str, float] | None, max_chars: int = 40
) -> str:
    """``30% epoch=12 loss=0.21``, or empty when nothing was reported. Whole metrics only (at
    most three, within ``max_chars``): a number is never cut."""
    parts = [] if progress is None else [f"{progress * 100:.0f}%"]
    for name, value in list((metrics or {}).items())[:MAX_METRICS_SHOWN]:
        part = f"{name}={number(value)}"
        if parts and len(" ".join([*parts, part])) > max_chars:
            break
        parts.append(part)
    return " ".join(parts)


def took_text(state: str | None, started: float | None, finished: float | None, now: float) -> str:
    """How long an attempt ran (``1m13s``); while it runs, how long so far (``running 3m00s``);
    ``-`` when it never started."""
    if started is None:
        return "-"
    if finished is not None:
        return duration(finished - started)
    return f"running {duration(now - started)}" if state == TaskState.RUNNING else "-"


def gpu_text(gpus: list[GpuView]) -> str:
    """``0:87% 29/80G 1:3% 0.5/80G``: each GPU's utilisation and memory, or ``-``."""
    shown = [
        f"{g.index}:{g.utilization:.0f}% "
        f"{g.memory_used_mib / 1024:.3g}/{g.memory_total_mib / 1024:.3g}G"
        for g in gpus
    ]
    return " ".join(shown) or "-"


ATTEMPT_COLUMNS = (
    Column("try", right=True),
    Column("state"),
    Column("worker", "name", floor=12),
    Column("queued", drop=3),
    Column("started", drop=2),
    Column("took", right=True),
    Column("exit", right=True),
    Column("error", "text", drop=1),
)


def attempts_table(listing: AttemptList) -> FitTable:
    """The table of ``dagq attempts ID TASK``: one row per attempt, oldest first."""
    table = FitTable(ATTEMPT_COLUMNS)
    now = time.time()
    for item in listing.items:
        state = item.state.value if item.state is not None else "(not kept)"
        table.add_row(
            f"{item.attempt}{'*' if item.current else ''}",
            Text(state, style=STATE_STYLE.get(state, "grey62")),
            item.worker or "-",
            timestamp(item.queued_at)[11:] if item.queued_at else "-",
            timestamp(item.started_at)[11:] if item.started_at else "-",
            took_text(item.state, item.started_at, item.finished_at, now),
            "-" if item.exit_code is None else str(item.exit_code),
            first_line(item.error, limit=200),
        )
    return table


def eta_of(info: TaskInfo, now: float) -> float | None:
    """Seconds a running task has left: its own ``eta_s`` metric, else from its progress and how
    long it has run (30% in 30 s: 70 s more); None when it reports neither."""
    metrics = info.metrics or {}
    if ETA_METRIC in metrics:
        return max(0.0, metrics[ETA_METRIC])
    p = info.progress
    if p is None or not 0 < p < 1 or info.started_at is None:
        return None
    return max(0.0, now - info.started_at) * (1 - p) / p


def _running(wf: Workflow) -> list[tuple[str, TaskInfo]]:
    """Running tasks, the ones that report something first, at most ``MAX_RUNNING_SHOWN``."""
    running = [(n, t) for n, t in wf.tasks.items() if t.state == TaskState.RUNNING]
    running.sort(key=lambda item: item[1].progress is None and not item[1].metrics)
    return running[:MAX_RUNNING_SHOWN]


def _cells(info: TaskInfo, now: float) -> tuple[str, str, str]:
    """(what it reports, how long it has run, its ETA or "")."""
    metrics = {k: v for k, v in (info.metrics or {}).items() if k != ETA_METRIC}
    eta = eta_of(info, now)
    ran = took_text(info.state, info.started_at, info.finished_at, now)
    return (
        progress_text(info.progress, metrics),
        ran,
        f"ETA {duration(eta)}" if eta is not None else "",
    )


RUNNING_COLUMNS = (
    Column("running task", "name", floor=30),
    Column("progress", "text", drop=1),
    Column("time", right=True),
    Column("eta", right=True),
)


def running_table(wf: Workflow, now: float) -> FitTable | None:
    """``dagq watch``'s running tasks: what each reports (progress, metrics), how long it has
    run, its ETA; None when none runs."""
    running = _running(wf)
    if not running:
        return None
    table = FitTable(RUNNING_COLUMNS)
    for name, info in running:
        table.add_row(name, *_cells(info, now))
    return table


def progress_lines(wf: Workflow, now: float) -> list[str]:
    """The running tasks that report something, one plain line each (``dagq watch`` off a
    terminal): ``  train: 30% loss=0.21, running 30s, ETA 1m10s``."""
    lines = []
    for name, info in _running(wf):
        shown, ran, eta = _cells(info, now)
        if shown or eta:
            lines.append(
                ", ".join(part for part in (f"  {name}: {shown}".rstrip(), ran, eta) if part)
            )
    return lines
