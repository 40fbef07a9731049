"""Task conditions: a small, safe expression language over the parents' states and outputs.

A condition is parsed with Python's ``ast`` module and checked against an allowlist of node
types; it is never passed to ``eval``/``compile``/``exec``, and no Python attribute is ever read
(``.field`` looks a key up in a JSON object). It compiles once into a tree of small closures that
can be evaluated many times.

The language (docs/workflow-format.md has the full reference):

- literals: numbers, ``"strings"``, ``true``/``false``/``null`` (also ``True``/``False``/``None``),
  lists ``[1, 2]``;
- a parent's output: ``inputs.train`` or ``inputs["train.seed=1"]``, then ``.field``, ``["key"]``
  or ``[0]`` into it;
- a parent's state: ``state("train")`` (``"completed"``, ``"failed"``, ``"skipped"``, ...);
- a glob over parents: ``inputs["train*"]`` are the outputs of the *completed* matching parents,
  ``state("train*")`` the states of *all* matching parents. ``.field`` and comparisons apply to each
  member; reduce with ``all(...)``, ``any(...)`` or ``count(...)`` (members not equal to ``false``);
- comparisons ``== != < <= > >= in not in`` and ``and``/``or``/``not`` over booleans.

A condition must evaluate to ``true`` or ``false``. Anything else, a missing field, or a type
mismatch raises ``ConditionError`` (the engine then skips the task and records the reason).

Evaluation cost is bounded (``MAX_CONDITION_STEPS``, counted in steps, never timed): a condition
whose cost bound is over the budget for its dependencies is refused when it is compiled, and an
evaluation that spends the budget anyway (outputs larger than the inline limit) stops with
``ConditionBudgetError`` (the engine then fails the task). The modules behind it:
``shared.definition.conditions.compile`` (syntax tree -> closures and cost bounds) and
``shared.definition.conditions.values`` (the operations and their cost).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from shared.definition.conditions.compile import ConditionCompiler, Fn
from shared.definition.conditions.reads import MatchBudget
from shared.definition.conditions.values import Evaluation, Inputs, show
from shared.errors import ConditionBudgetError, ConditionError
from shared.limits import (
    MAX_CONDITION_CHARS,
    MAX_CONDITION_DEPTH,
    MAX_CONDITION_STEPS,
)

__all__ = ["Condition", "compile_condition"]


class Condition:
    """A compiled condition: immutable, reusable, safe to share between threads."""

    __slots__ = ("_fn", "max_steps", "parents", "source")

    source: str
    """The expression as written."""
    parents: tuple[str, ...]
    """The parents it reads (its evaluation needs a view of each)."""
    max_steps: int
    """Most steps one evaluation can take while every output is within the inline limit."""

    def __init__(self, source: str, fn: Fn, parents: tuple[str, ...], max_steps: int) -> None:
        self.source = source
        self.max_steps = max_steps
        self.parents = parents
        self._fn = fn

    def evaluate(self, inputs: Inputs, *, max_steps: int = MAX_CONDITION_STEPS) -> bool:
        """True or false; raises ConditionError saying why when it cannot decide, and
        ConditionBudgetError when it would take more than ``max_steps`` steps."""
        try:
            result = self._fn(Evaluation(inputs, max_steps))
        except ConditionError:
            raise
        except (RecursionError, MemoryError) as exc:  # defensive: inputs are untrusted outputs
            raise ConditionError(f"condition could not be evaluated: {type(exc).__name__}") from exc
        if not isinstance(result, bool):
            raise ConditionError(
                f"condition must be true or false, but it evaluated to {show(result)}"
            )
        return result

    def __repr__(self) -> str:
        return f"Condition({self.source!r})"


def compile_condition(
    expr: str, parents: Sequence[str], match_budget: MatchBudget | None = None
) -> Condition:
    """Parse and check ``expr`` against the task's ``parents``; raise ConditionError.

    ``match_budget``: glob name tests shared with other conditions (a validation passes one, so
    many conditions over many dependencies stay bounded); each condition also has its own."""
    if not isinstance(expr, str) or not expr.strip():
        raise ConditionError("condition must be a non-empty expression")
    if len(expr) > MAX_CONDITION_CHARS:
        raise ConditionError(
            f"condition is {len(expr)} characters long; the limit is {MAX_CONDITION_CHARS}"
        )
    # YAML block scalars (`condition: |`) keep line breaks; an expression is one logical line.
    text = " ".join(expr.split("\n")).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ConditionError(f"condition syntax error{where}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ConditionError(f"condition cannot be parsed: {exc}") from None
    _check_depth(tree)
    shared = match_budget if match_budget is not None else MatchBudget(MAX_CONDITION_STEPS)
    compiler = ConditionCompiler(text, parents, MAX_CONDITION_STEPS, shared)
    code = compiler.compile(tree.body)
    if code.many:
        raise ConditionError(
            "the condition gives one value per glob member: reduce it with all(...), any(...)"
            " or count(...)"
        )
    if code.cost > MAX_CONDITION_STEPS:
        cost, where = compiler.costliest
        raise ConditionBudgetError(
            f"the condition could take up to {code.cost:,} steps to evaluate with this task's"
            f" {len(parents):,} dependencies (most in {where!r}: {cost:,}); the limit is"
            f" {MAX_CONDITION_STEPS:,}. Comparing a whole output costs up to one step per JSON"
            " value in it, for every glob member: compare small fields"
            ' (inputs["train*"].accuracy > 0.9), not whole outputs, or match fewer dependencies'
        )
    return Condition(expr, code.fn, tuple(dict.fromkeys(compiler.used)), code.cost)


# -- checking ---------------------------------------------------------------------------------


def _check_depth(tree: ast.AST) -> None:
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_CONDITION_DEPTH:
            raise ConditionError(
                f"condition is nested too deeply (more than {MAX_CONDITION_DEPTH} levels)"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
