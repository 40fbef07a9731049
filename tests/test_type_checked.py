"""mypy --strict (make lint) covers every Python program of the repo: the Functions app, shared/,
the worker, the devtools and the examples' task scripts; only the tests and the benchmarks stand
outside it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNCHECKED = {"tests", "bench"}
"""Top-level folders mypy does not check (pyproject's [tool.mypy] exclude)."""


def _programs() -> set[str]:
    """Top-level Python modules and folders holding Python code, as paths from the root."""
    found = {path.name for path in ROOT.glob("*.py")}
    for folder in ROOT.iterdir():
        if not folder.is_dir() or folder.name.startswith(".") or folder.name in UNCHECKED:
            continue
        if folder.name == "node_modules" or folder.name.endswith(".egg-info"):
            continue
        if any(folder.rglob("*.py")):
            found.add(folder.name)
    return found


def test_mypy_checks_every_program() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    targets = set(config["files"])
    missing = _programs() - targets
    assert not missing, f"add {sorted(missing)} to [tool.mypy] files in pyproject.toml"
    assert {"function_app.py", "dagq", "shared", "worker_agent", "devtools", "examples"} <= targets
