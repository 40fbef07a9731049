"""Progress and metrics a running task reports about itself, and their bounds.

A task appends JSON lines to the file named by ``$DAGQ_PROGRESS``, for example
``{"progress": 0.3, "epoch": 12, "loss": 0.21}``. The worker reads the new lines now and then
(``worker_agent.progress``), folds them into the latest ``TaskProgress`` of the attempt and sends it
with its registry heartbeat; the API joins it to the running task's view. No coordinator event is
posted per update and nothing of it enters the state blob.

Everything here is untrusted input from the task, bounded before use:

- ``progress`` is a finite number in [0, 1] (anything else on a line is ignored; an integer too
  large for a float is not a number);
- every other key is a metric: its name must be a plain key (``METRIC_NAME``: letters, digits,
  ``_ . -``, at most ``MAX_METRIC_NAME`` characters, starting with a letter or ``_``) and its value
  a finite number (JSON booleans, strings, lists... are ignored); a later line replaces a metric's
  value; at most ``MAX_METRICS`` metrics are kept per attempt (new names past that are ignored);
- a line longer than ``MAX_LINE_BYTES`` or not a JSON object is skipped.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from shared.limits import MAX_METRIC_NAME, MAX_METRICS
from shared.limits import MAX_PROGRESS_LINE_BYTES as MAX_LINE_BYTES

METRIC_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_.\-]{{0,{MAX_METRIC_NAME - 1}}}")
"""What a metric name may be (never markup, never a path)."""
PROGRESS_KEY = "progress"


def _number(value: object) -> float | None:
    """A finite JSON number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits: not a number we keep
        return None
    return number if math.isfinite(number) else None


@dataclass
class TaskProgress:
    """The latest progress (0-1, or None) and metrics one attempt reported."""

    progress: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    def fold_line(self, line: bytes) -> bool:
        """Apply one JSON line; True if it changed anything. Bad lines change nothing."""
        if len(line) > MAX_LINE_BYTES:
            return False
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(data, dict):
            return False
        before = (self.progress, dict(self.metrics))
        for key, value in data.items():
            number = _number(value)
            if number is None:
                continue
            if key == PROGRESS_KEY:
                if 0.0 <= number <= 1.0:
                    self.progress = number
            elif METRIC_NAME.fullmatch(key) and (
                key in self.metrics or len(self.metrics) < MAX_METRICS
            ):
                self.metrics[key] = number
        return (self.progress, self.metrics) != before

    def to_json(self) -> dict[str, object]:
        """The compact form sent with a heartbeat (``p``: progress, ``m``: metrics)."""
        out: dict[str, object] = {}
        if self.progress is not None:
            out["p"] = round(self.progress, 4)
        if self.metrics:
            out["m"] = self.metrics
        return out

    @classmethod
    def from_json(cls, raw: object) -> TaskProgress:
        """Read ``to_json``'s form back, re-applying every bound (a registry row is untrusted)."""
        progress = cls()
        if not isinstance(raw, dict):
            return progress
        line: dict[str, object] = {}
        if isinstance(raw.get("m"), dict):
            line.update(list(raw["m"].items())[:MAX_METRICS])
        if "p" in raw:
            line[PROGRESS_KEY] = raw["p"]
        progress.fold_line(json.dumps(line).encode())
        return progress

    @property
    def empty(self) -> bool:
        """Nothing reported."""
        return self.progress is None and not self.metrics
