"""The CLI's small words: a state's colour, a duration, a UTC time, an error's telling line.

The tables of ``render.py``, ``live_render.py`` and ``ops_render.py`` share them; this module
imports none of them (so no module of the CLI imports another in a circle).
"""

from __future__ import annotations

import time

from shared.states import TaskState

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
"""Each task state's colour in every table and bar."""


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


def first_line(text: str | None, limit: int | None = 80) -> str:
    """The last non-blank line of ``text`` (where an error says what went wrong), cut to
    ``limit`` characters (``None``: whole)."""
    if not text:
        return ""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"
