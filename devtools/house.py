"""The drawn house: dagq's imports between packages, drawn as floors, and the rules they keep.

    python -m devtools.house     print the floors, top first; exit 1 if a rule is broken

The rooms are the packages of ``shared/`` (``api``, ``engine``...), the *kernel* (shared's top-level
modules: one floor by design, see docs/architecture.md), ``worker_agent``, ``dagq`` (the Python face
users import), ``devtools`` and the Functions app (``function_app.py``). A room's floor is one above
the highest room it imports, so the drawing shows the house as the code builds it, not as it was
planned. The rules (issues 18 and 34):

1. no circle between rooms, and none between modules (inside a room either: a circle hidden behind
   ``if TYPE_CHECKING:`` or a function-level import is still one; the simulation, ``sim/``, is
   held to this rule too, though it is no room);
2. nothing imports upward: every import between rooms runs down the plan, the floors of the import
   contracts in pyproject.toml (``[tool.importlinter]``, which ``make lint`` enforces module by
   module; the app and devtools stand on top, the worker and dagq above shared);
3. at most ``MAX_FLOORS`` floors.

The graph is grimp's (import-linter's), imports under ``if TYPE_CHECKING:`` and inside functions
included; the app is a module, not a package, so its imports are read from its syntax tree.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "worker_agent", "dagq", "devtools")
MODULE_PACKAGES = (*PACKAGES, "sim")
"""The packages whose modules must not import each other in a circle."""
APP = "function_app"
KERNEL = "kernel"
MAX_FLOORS = 12
TOP = frozenset({"devtools", APP})
"""The rooms above everything: the Functions app and the developer tools (siblings)."""

Rooms = Mapping[str, frozenset[str]]
"""Each room -> the rooms it imports (never itself); or each module -> the modules it imports."""


def room_of(module: str, shared_packages: frozenset[str]) -> str | None:
    """The room ``module`` (dotted) lives in, or None for a module outside the house."""
    parts = module.split(".")
    if parts[0] == "shared":
        if len(parts) > 1 and parts[1] in shared_packages:
            return parts[1]
        return KERNEL
    if parts[0] in PACKAGES or parts[0] == APP:
        return parts[0]
    return None


def shared_packages(root: Path = ROOT) -> frozenset[str]:
    """The subpackages of ``shared/`` (directories with an ``__init__.py``)."""
    return frozenset(p.parent.name for p in (root / "shared").glob("*/__init__.py"))


def app_imports(path: Path) -> set[str]:
    """Every module ``function_app.py`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def read_rooms(root: Path = ROOT) -> dict[str, frozenset[str]]:
    """The house's rooms and the rooms each imports, from the code under ``root``."""
    packages = shared_packages(root)
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    imports: dict[str, set[str]] = {}

    def add(importer: str, imported: Iterable[str]) -> None:
        into = imports.setdefault(importer, set())
        for module in imported:
            room = room_of(module, packages)
            if room is not None and room != importer:
                into.add(room)

    for module in graph.modules:
        room = room_of(module, packages)
        if room is not None:
            add(room, graph.find_modules_directly_imported_by(module))
    add(APP, app_imports(root / f"{APP}.py"))
    return {room: frozenset(targets) for room, targets in imports.items()}


def read_modules() -> dict[str, frozenset[str]]:
    """Every module of ``MODULE_PACKAGES`` and the modules of theirs it imports (never itself)."""
    graph = grimp.build_graph(*MODULE_PACKAGES, cache_dir=None)
    return {
        module: frozenset(
            target
            for target in graph.find_modules_directly_imported_by(module)
            if target in graph.modules and target != module
        )
        for module in graph.modules
    }


def plan(root: Path = ROOT) -> list[frozenset[str]]:
    """The planned floors, top first: the app and devtools, the worker and dagq, then shared's
    floors.

    Shared's floors are the ``floors`` layers contract of pyproject.toml; its last layer (the
    top-level modules of shared) is the kernel room.
    """
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    (floors,) = [c for c in config["contracts"] if c.get("id") == "floors"]
    layers: list[str] = floors["layers"]
    shared_floors = [
        frozenset(name.strip() for name in layer.replace(":", "|").split("|"))
        for layer in layers[:-1]
    ]
    return [TOP, frozenset({"worker_agent", "dagq"}), *shared_floors, frozenset({KERNEL})]


def find_circle(rooms: Rooms) -> list[str] | None:
    """A circle of imports between rooms or modules (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(room: str) -> list[str] | None:
        state[room] = 1
        path.append(room)
        for target in sorted(rooms.get(room, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (circle := visit(target)) is not None:
                return circle
        state[room] = 2
        path.pop()
        return None

    for room in sorted(rooms):
        if room not in state and (circle := visit(room)) is not None:
            return circle
    return None


def floors(rooms: Rooms) -> list[list[str]]:
    """The drawn floors, top first: a room is one floor above the highest room it imports.

    Requires a house without circles (``find_circle``).
    """
    height: dict[str, int] = {}

    def floor(room: str) -> int:
        if room not in height:
            height[room] = 1 + max((floor(t) for t in rooms.get(room, ())), default=0)
        return height[room]

    everyone = set(rooms) | {t for targets in rooms.values() for t in targets}
    drawn: dict[int, list[str]] = {}
    for room in sorted(everyone):
        drawn.setdefault(floor(room), []).append(room)
    return [drawn[level] for level in sorted(drawn, reverse=True)]


@dataclass(frozen=True)
class Verdict:
    """What the house looks like and which rules it breaks (no problems: all kept)."""

    floors: list[list[str]]
    problems: list[str]


def judge(rooms: Rooms, planned: list[frozenset[str]], modules: Rooms | None = None) -> Verdict:
    """Check the three rules of the module docstring over ``rooms`` (and ``modules``, when given)
    against ``planned``."""
    problems: list[str] = []
    between_modules = find_circle(modules or {})
    if between_modules is not None:
        problems.append("a circle between modules: " + " -> ".join(between_modules))
    circle = find_circle(rooms)
    if circle is not None:
        problems.append("a circle: " + " -> ".join(circle))
        return Verdict([], problems)
    level = {room: index for index, floor in enumerate(planned) for room in floor}
    for room in sorted(rooms):
        if room not in level:
            problems.append(f"{room} is on no floor of the plan (pyproject.toml's contracts)")
            continue
        for target in sorted(rooms[room]):
            if target in level and level[target] <= level[room]:
                problems.append(f"{room} imports {target}, which is not below it in the plan")
    drawn = floors(rooms)
    if len(drawn) > MAX_FLOORS:
        problems.append(f"{len(drawn)} floors, more than {MAX_FLOORS}")
    return Verdict(drawn, problems)


def drawing(verdict: Verdict, rooms: Rooms) -> str:
    """The floors as text, top first, each room with the rooms it imports."""
    lines: list[str] = []
    number = len(verdict.floors)
    for floor in verdict.floors:
        for index, room in enumerate(floor):
            label = f"{number:>2}" if index == 0 else "  "
            targets = ", ".join(sorted(rooms.get(room, ())))
            lines.append(f"{label}  {room:<13}{'-> ' + targets if targets else ''}".rstrip())
        number -= 1
    return "\n".join(lines)


def main() -> int:
    """Print the drawn house; 1 if a rule is broken."""
    rooms = read_rooms()
    verdict = judge(rooms, plan(), read_modules())
    if verdict.floors:
        print(drawing(verdict, rooms))
    for problem in verdict.problems:
        print(f"house: {problem}", file=sys.stderr)
    return 1 if verdict.problems else 0


if __name__ == "__main__":
    sys.exit(main())
