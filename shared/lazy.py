"""Lazy package faces (PEP 562): a package's ``__init__`` names its public API, and the module that
defines a name is imported only when the name is first used.

Why: importing a package runs its ``__init__``, and importing any of its modules imports the
package first. The Functions app imports ``shared.api``'s modules at start-up, where heavy imports
(pydantic, the Azure SDKs, the engine) would cost the cold start (docs/architecture.md);
the worker imports storage ports and must not pay for adapters it does not use. A lazy face costs
nothing until a name is read::

    # shared/ops/__init__.py
    if TYPE_CHECKING:  # what type checkers and readers see
        from shared.ops.purge import purge_many, purge_workflow
    __all__ = ["purge_many", "purge_workflow"]
    __getattr__ = lazy_names(__name__, {"shared.ops.purge": ("purge_many", "purge_workflow")})

A face never names a function after one of its package's modules: importing the module sets the
package attribute of that name to the module (tests/test_faces.py checks every face).
"""

from __future__ import annotations

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
