"""The task contract of dagq, for the example scripts (standard library only).

A worker runs each task with these environment variables:

- ``DAGQ_UPSTREAM``: path of a JSON file ``{parent task name: its output}``;
- ``DAGQ_OUTPUT``: path where the task may write its own output (one JSON document);
- ``DAGQ_WORKFLOW_ID``, ``DAGQ_TASK``, ``DAGQ_ATTEMPT``: who and which attempt this is.

Outside a worker (running a script by hand) both files are optional: upstream is empty and the
output is printed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def upstream() -> dict[str, Any]:
    """Outputs of this task's parents, by parent name (empty when run by hand)."""
    path = os.environ.get("DAGQ_UPSTREAM")
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return data if isinstance(data, dict) else {}


def write_output(value: Any) -> None:
    """Publish this task's output (children read it through their DAGQ_UPSTREAM)."""
    text = json.dumps(value, indent=None, separators=(",", ":"))
    path = os.environ.get("DAGQ_OUTPUT")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        print(text)


def log(message: str) -> None:
    """A line in the task's log (the worker keeps stdout and stderr)."""
    task = os.environ.get("DAGQ_TASK", os.path.basename(sys.argv[0]))
    attempt = os.environ.get("DAGQ_ATTEMPT", "-")
    print(f"[{task} attempt {attempt}] {message}", flush=True)
