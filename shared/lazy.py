"""Lazy package faces (PEP 562): a package's ``__init__`` names its public API, and the module that
defines a name is imported only when the name is first used.

Why: importing a package runs its ``__init__``, and importing any of its modules imports the
package first. The Functions app imports ``shared.api``'s modules at start-up, where heavy imports
(pydantic, the Azure SDKs, the engine) would cost the cold start (docs/architecture.md);
the worker imports storage ports and must not pay for adapters it does not use. A lazy face costs
nothing until a name is read. A face declares each name once, as an import that type checkers
and readers see; ``lazy_face`` reads those imports back for ``__all__`` and ``__getattr__``::

    # shared/ops/__init__.py
    if TYPE_CHECKING:
        from shared.ops.purge import purge_many as purge_many
        from shared.ops.purge import purge_workflow as purge_workflow
    __all__, __getattr__ = lazy_face(__name__, __file__)

A face never names a function after one of its package's modules: importing the module sets the
package attribute of that name to the module (tests/test_faces.py checks every face).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name from its module on first use.

    ``modules`` maps a module (dotted) to the names the face takes from it.
    """
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__


def lazy_face(package: str, init_file: str) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and ``__getattr__`` of a lazy face, from its one declaration: the imports of its
    package's modules in its ``__init__`` (read from ``init_file``, the face's ``__file__``), at
    the top (imported with the package) or under ``if TYPE_CHECKING:`` (imported on first use)::

        if TYPE_CHECKING:
            from shared.ops.purge import purge_many as purge_many
        __all__, __getattr__ = lazy_face(__name__, __file__)

    (``name as name``: what mypy takes for a re-export). Reading the face's own source costs about a
    millisecond and imports nothing (``ast`` is loaded by then): faces stay free at start-up.
    """
    modules: dict[str, list[str]] = {}
    with open(init_file, encoding="utf-8") as file:
        source = file.read()
    for module, name in face_imports(package, source):
        modules.setdefault(module, []).append(name)
    names = sorted(name for found in modules.values() for name in found)
    return names, lazy_names(package, {m: tuple(found) for m, found in modules.items()})


def face_imports(package: str, source: str) -> list[tuple[str, str]]:
    """Each (module, name) a face's source imports from a module of ``package``, at the top or
    under ``if TYPE_CHECKING:``, in the order written."""
    found: list[tuple[str, str]] = []
    top = ast.parse(source).body
    guarded = [
        node
        for statement in top
        if isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING"
        for node in statement.body
    ]
    for node in [*top, *guarded]:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package + "."):
            found.extend((str(node.module), alias.asname or alias.name) for alias in node.names)
    return found
