"""Task conditions: a small, safe expression language over the parents' states and outputs.

- ``language``: ``compile_condition`` (text -> ``Condition``), the allowlist's entry point and
  the language's reference in its docstring;
- ``compile``: an allowlisted syntax tree -> small closures, with a static cost bound;
- ``reads``: reading the parents (``inputs.<task>``, globs, ``state(...)``, fields, indexes);
- ``values``: what a condition does with JSON values at run time, each operation paid in steps.

The compiler (``shared.definition.passes.dependencies``) checks each condition at submit; the
engine (``shared.engine.policy``) evaluates it when the task is ready.
"""

from __future__ import annotations

from shared.definition.conditions.language import Condition, compile_condition
from shared.definition.conditions.reads import MatchBudget
from shared.definition.conditions.values import ParentView

__all__ = ["Condition", "MatchBudget", "ParentView", "compile_condition"]
