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


def _fixtures(path: Path) -> set[str]:
    """The names of the fixtures ``path`` defines (``@pytest.fixture`` functions) or imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            "fixture" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _registered() -> dict[str, str]:
    """Each fixture of the suite's root conftest and of the plugins it registers, and its module."""
    root = ROOT / "tests" / "conftest.py"
    tree = ast.parse(root.read_text(encoding="utf-8"))
    plugins = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets)
    )
    modules = [root, *(ROOT / (plugin.replace(".", "/") + ".py") for plugin in plugins)]
    return {
        name: str(module.relative_to(ROOT))
        for module in modules
        for name in _fixtures(module)
        if not name[0].isupper()  # a class imported beside the fixtures is no fixture
    }


def test_the_shared_fixtures_are_registered_once_and_no_conftest_names_one_again() -> None:
    """A fixture more than one folder takes is registered once (``pytest_plugins`` in
    tests/conftest.py) and means one thing everywhere: no folder's conftest defines or imports a
    fixture of the same name (``storage`` in one folder and another storage in the next)."""
    registered = _registered()
    assert {"storage", "memory_storage", "clock", "azure_storage", "stack"} <= registered.keys()
    offenders = [
        f"{path.relative_to(ROOT)} names {name!r}, registered by {registered[name]}"
        for path in sorted((ROOT / "tests").rglob("conftest.py"))
        if path != ROOT / "tests" / "conftest.py"
        for name in sorted(_fixtures(path) & registered.keys())
    ]
    assert offenders == []
