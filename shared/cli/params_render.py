"""A run's workflow parameters as ``dagq status`` and ``dagq cost`` show them: one line of
``NAME=VALUE`` phrases (values as the task sees them in ``DAGQ_PARAM_<NAME>``, long ones cut)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

from shared.cli.fit_table import Phrases
from shared.client.operations import param_text

MAX_SHOWN = 60
"""Characters of one value shown (the whole value is in ``dagq status --json``)."""


def shown_value(value: str | int | float | bool) -> str:
    text = param_text(value).replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def params_line(params: Mapping[str, str | int | float | bool]) -> Phrases | None:
    """``params  lr=0.01  checkpoint=ckpt-0042`` (None when the run has none)."""
    if not params:
        return None
    line = Phrases(Text("params", style="grey62"))
    for name, value in params.items():
        line.append(Text(f"{name}={shown_value(value)}"))
    return line
