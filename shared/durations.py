"""Durations as people write them: ``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` or plain seconds.

One parser for every place that reads one (a definition's ``cache.ttl``, ``dagq purge
--older-than``, ``dagq cost --since``), so they all accept the same spellings.
"""

from __future__ import annotations

import re

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
"""Unit letter -> seconds."""

_DURATION_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*")
EXAMPLES = "30d, 12h, 90m, 3600s or 2w"


def parse_duration(text: str) -> float:
    """``30d`` -> 2592000.0. Raises ValueError saying what was expected."""
    match = _DURATION_RE.fullmatch(text.lower())
    if not match:
        raise ValueError(f"expected a duration such as {EXAMPLES}, got {text!r}")
    return float(match.group(1)) * UNITS[match.group(2) or "s"]


def spell_duration(seconds: float) -> str:
    """The largest whole unit: 2592000 -> ``30d``."""
    for unit in "wdhm":
        if seconds and seconds % UNITS[unit] == 0:
            return f"{seconds / UNITS[unit]:g}{unit}"
    return f"{seconds:g}s"
