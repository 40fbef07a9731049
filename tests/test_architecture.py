"""The import rules of docs/architecture.md are a contract: ``make lint`` runs ``lint-imports``
over the contracts in pyproject.toml, and a forbidden import fails it, naming the rule it breaks.

The violations are made in a copy of the tree (never in the repository), and the copy is checked
with the repository's own contracts.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from devtools import house

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {contract["id"]: contract for contract in CONFIG["contracts"]}


def lint_imports(cwd: Path) -> tuple[int, dict[str, str], str]:
    """lint-imports in ``cwd`` (its pyproject.toml and packages): code, verdicts by name, output."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "500", "NO_COLOR": "1"}
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    names = {contract["name"] for contract in CONFIG["contracts"]}
    verdicts = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"(.+) (KEPT|BROKEN)", line.strip())
        if match and match[1] in names:
            verdicts[match[1]] = match[2]
    return done.returncode, verdicts, done.stdout + done.stderr


def test_the_tree_keeps_every_import_contract() -> None:
    code, verdicts, output = lint_imports(ROOT)
    assert code == 0, output
    assert verdicts == {contract["name"]: "KEPT" for contract in CONFIG["contracts"]}, output


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and pyproject.toml copied (Python files only), to break on purpose."""
    copy = tmp_path_factory.mktemp("tree")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for package in CONFIG["root_packages"]:
        shutil.copytree(
            ROOT / package,
            copy / package,
            ignore=lambda folder, names: (
                [n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir()]
                + ["__pycache__"]
            ),
        )
    return copy


# (file, the import added to it, the contracts it breaks)
VIOLATIONS = [
    pytest.param(
        "shared/engine/policy.py",
        "import azure.storage.blob",
        {"pure-core"},
        id="the engine imports the Azure SDK",
    ),
    pytest.param(
        "shared/definition/spec.py",
        "import httpx",
        {"pure-core"},
        id="the definition imports an HTTP client",
    ),
    pytest.param(
        "shared/limits.py",
        "import shared.engine.step",
        # the worker and dagq import the limits: now the engine through them
        {"floors", "lean-worker", "python-face"},
        id="the kernel imports a floor above",
    ),
    pytest.param(
        "shared/codec/state.py",
        "from shared.storage import ports",
        {"floors", "pure-core"},
        id="the codec imports the storage shell",
    ),
    pytest.param(
        "shared/cli/submit.py",
        "import shared.ops.purge",
        {"client-stands-alone"},
        id="the CLI imports a server package",
    ),
    pytest.param(
        "shared/client/transport.py",
        "import shared.api.http",
        {"floors", "client-stands-alone", "python-face"},  # dagq stands on the client
        id="the client imports its sibling, the API",
    ),
    pytest.param(
        "worker_agent/heartbeat.py",
        "import shared.engine",
        {"lean-worker"},
        id="the worker imports the engine",
    ),
    pytest.param(
        "shared/names.py",
        "import worker_agent.logfile",
        {"programs"},
        id="shared imports the worker",
    ),
    pytest.param(
        "dagq/builder.py",
        "import shared.storage",
        {"python-face"},
        id="the Python face imports the storage shell",
    ),
    pytest.param(
        "dagq/builder.py",
        "import worker_agent",
        {"programs", "python-face"},  # dagq's import of the worker: siblings; the worker: storage
        id="the Python face imports the worker",
    ),
]


@pytest.mark.parametrize(("path", "line", "broken"), VIOLATIONS)
def test_a_forbidden_import_fails_and_names_its_contract(
    tree_copy: Path, path: str, line: str, broken: set[str]
) -> None:
    target = tree_copy / path
    original = target.read_text()
    target.write_text(original + f"\n{line}  # noqa\n")
    try:
        code, verdicts, output = lint_imports(tree_copy)
    finally:
        target.write_text(original)
    assert code == 1, output
    expected = {CONTRACTS[id_]["name"]: "BROKEN" if id_ in broken else "KEPT" for id_ in CONTRACTS}
    assert verdicts == expected, output
    # the report says which import broke it, and where
    assert f"{path.removesuffix('.py').replace('/', '.')} -> " in output, output


def test_every_module_of_shared_is_on_a_floor() -> None:
    """A module the floors leave out would be checked by no layer: each one is named."""
    layers = CONTRACTS["floors"]["layers"]
    named = [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]
    packages = {p.parent.name for p in (ROOT / "shared").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "shared").glob("*.py")} - {"__init__"}
    where = "pyproject.toml's [tool.importlinter] contracts (see docs/architecture.md)"
    assert sorted(named) == sorted(packages | modules), (
        f"a package or top-level module of shared/ is missing from the floors of {where}: put a "
        "new top-level module on the kernel floor (and in pure-core's source_modules)"
    )
    kernel = {name.strip() for name in layers[-1].split(":")}
    assert kernel == modules, "the bottom floor (the kernel) is shared's top-level modules"
    core = {
        "definition",
        "engine",
        "codec",
        "views",
        "caching",
        "cost",
        "signing",
        "messages",
    } | kernel
    assert set(CONTRACTS["pure-core"]["source_modules"]) == {f"shared.{m}" for m in core}, (
        f"pure-core's source_modules in {where} are the core packages and the kernel"
    )


def test_make_lint_runs_each_linter_once_and_ci_still_checks_infra() -> None:
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile[makefile.index("\nlint:") :].split("\n\n")[0]
    tools = [line.split()[0].removeprefix("$(VENV)/bin/") for line in lint.strip().splitlines()[1:]]
    assert tools == ["ruff", "ruff", "mypy", "lint-imports"], (
        "make lint: ruff, format, mypy, contracts"
    )
    assert "infra-check" not in lint, "make lint stays fast: the infra tools are make infra-check"
    infra = makefile[makefile.index("\ninfra-check:") :].split("\n\n")[0]
    assert "lint-imports" not in infra, "the contracts run once, in make lint"
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line[:1] != "#"]
    assert commands.index("make lint") < commands.index("make test"), "CI lints before it tests"
    assert "make infra-check" in commands, "CI still checks infra/ with the field's tools"


def test_the_drawn_house_has_no_circle_nothing_upward_and_at_most_12_floors() -> None:
    """No circle between rooms, nor between modules (issue 34: render <-> live_render, state <->
    attempt_history, world <-> actors, http <-> query were circles hidden behind function-level
    imports and ``if TYPE_CHECKING:``)."""
    rooms = house.read_rooms()
    verdict = house.judge(rooms, house.plan(), house.read_modules())
    assert verdict.problems == []
    assert 1 < len(verdict.floors) <= house.MAX_FLOORS
    assert verdict.floors[-1] == [house.KERNEL]
    drawn = {room for floor in verdict.floors for room in floor}
    assert drawn == {*house.shared_packages(), house.KERNEL, *house.TOP, "worker_agent", "dagq"}


def test_the_house_names_a_circle_and_an_upward_import() -> None:
    planned = [frozenset({"api"}), frozenset({"engine"}), frozenset({house.KERNEL})]
    circle = {"api": frozenset({"engine"}), "engine": frozenset({"api"})}
    assert house.judge(circle, planned).problems == ["a circle: api -> engine -> api"]
    upward = {"api": frozenset({"engine"}), house.KERNEL: frozenset({"engine"})}
    assert house.judge(upward, planned).problems == [
        "kernel imports engine, which is not below it in the plan"
    ]
    modules = {
        "shared.cli.render": frozenset({"shared.cli.live_render"}),
        "shared.cli.live_render": frozenset({"shared.cli.render"}),
    }
    assert house.judge({}, planned, modules).problems == [
        "a circle between modules: shared.cli.live_render -> shared.cli.render"
        " -> shared.cli.live_render"
    ]
    tall = {f"room{i}": frozenset({f"room{i + 1}"}) for i in range(house.MAX_FLOORS)}
    plan = [frozenset({f"room{i}"}) for i in range(house.MAX_FLOORS + 1)]
    assert house.judge(tall, plan).problems == [f"13 floors, more than {house.MAX_FLOORS}"]


def test_docs_show_the_house_as_drawn() -> None:
    rooms = house.read_rooms()
    drawing = house.drawing(house.judge(rooms, house.plan()), rooms)
    assert f"```\n{drawing}\n```" in (ROOT / "docs" / "architecture.md").read_text(), (
        "docs/architecture.md's drawn house is out of date: paste `python -m devtools.house`"
    )


def _modules_of(*packages: str) -> list[Path]:
    return sorted(
        path
        for package in packages
        for path in (ROOT / package).rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def test_docs_name_every_module_of_shared_and_the_worker() -> None:
    """docs/architecture.md is the map: each module of shared/ and worker_agent/ is named there, in
    backquotes, by its file name or a path ending in it (`blobs.py`, `azure/deadletters.py`)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    unnamed = [
        str(path.relative_to(ROOT))
        for path in _modules_of("shared", "worker_agent")
        if not re.search(rf"`(?:[\w./]+/)?{re.escape(path.name)}`", doc)
    ]
    assert unnamed == [], "name these modules in docs/architecture.md, where their package is"


START_UP = ("shared/api/", "shared/cli/", "worker_agent/cli.py", "shared/coordinator/__main__.py")
"""Where an import inside a function keeps a start-up fast (docs/architecture.md, the cold-start
rule): the app's handlers, the CLI's commands, the programs' entry points."""
LOADED_WHEN_NEEDED = ("azure.", "cryptography", "croniter", "zoneinfo")
"""Optional or heavy libraries imported by the one function that needs them."""


def test_function_level_imports_only_where_the_cold_start_rule_says() -> None:
    strays = []
    for path in _modules_of("shared", "worker_agent", "dagq"):
        where = str(path.relative_to(ROOT))
        if where.startswith(START_UP):
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                elif isinstance(node, ast.Import):
                    module = node.names[0].name
                else:
                    continue
                if not module.startswith(LOADED_WHEN_NEEDED):
                    strays.append(f"{where}:{node.lineno} {module}")
    assert strays == [], "import at the top of the module (docs/architecture.md, cold start)"
