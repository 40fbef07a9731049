"""The house stays readable: small modules, and a shared/ whose top level shows its floors.

docs/architecture.md: no Python module over 400 lines in the app, the core, the worker or the
devtools (a module that outgrows it becomes a package with a face, as rq's worker did), and at
most 15 top-level modules in shared/ (the rest live in its packages).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400
MAX_TOP_LEVEL = 15


def _modules() -> list[Path]:
    found = [ROOT / "function_app.py"]
    for folder in ("shared", "worker_agent", "dagq", "devtools"):
        found += sorted((ROOT / folder).rglob("*.py"))
    return found


def test_no_module_is_over_the_line_limit() -> None:
    over = {
        str(path.relative_to(ROOT)): n
        for path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not over, f"split these by job (over {MAX_LINES} lines): {over}"


def test_shared_keeps_its_top_level_small() -> None:
    top = sorted(p.name for p in (ROOT / "shared").glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} top-level modules in shared/: {top}"


def test_the_limit_sees_the_modules() -> None:
    # The checks above read real files: the walk finds the app, the engine and the worker.
    names = {str(p.relative_to(ROOT)) for p in _modules()}
    assert {"function_app.py", "shared/engine/step.py", "worker_agent/agent.py"} <= names
