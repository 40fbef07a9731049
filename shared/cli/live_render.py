"""How the CLI shows what tasks are doing and did: progress, metrics, attempts, GPU use."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

from shared.cli.fit_table import Column, FitTable
from shared.cli.style import STATE_STYLE, duration, first_line, timestamp
from shared.views import AttemptList, GpuView

MAX_METRICS_SHOWN = 3


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
    for item in listing.items:
        took = None
        if item.started_at is not None and item.finished_at is not None:
            took = item.finished_at - item.started_at
        state = item.state.value if item.state is not None else "(not kept)"
        table.add_row(
            f"{item.attempt}{'*' if item.current else ''}",
            Text(state, style=STATE_STYLE.get(state, "grey62")),
            item.worker or "-",
            timestamp(item.queued_at)[11:] if item.queued_at else "-",
            timestamp(item.started_at)[11:] if item.started_at else "-",
            duration(took),
            "-" if item.exit_code is None else str(item.exit_code),
            first_line(item.error, limit=200),
        )
    return table
