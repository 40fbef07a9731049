"""The tests' own layout (issue 34): a test module is run, never imported. What tests share lives
in a helper module of their folder or in tests/support/, and fixtures come from a conftest.py, so
no module of tests/ imports a test module or a conftest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imported(path: Path) -> list[str]:
    """The modules ``path`` imports, relative ones resolved against its package."""
    package = path.relative_to(ROOT).parent.parts
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append(module)
            found.extend(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_no_module_of_the_tests_imports_a_test_module_or_a_conftest() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder in ("tests", "bench", "sim")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for module in _imported(path)
        if module.startswith("tests.")
        and module.rsplit(".", 1)[-1].startswith(("test_", "conftest"))
        and (ROOT / (module.replace(".", "/") + ".py")).exists()
    ]
    assert offenders == []
