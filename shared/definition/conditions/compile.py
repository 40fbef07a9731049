"""An allowlisted condition syntax tree -> a tree of small closures, with a static cost bound.

Each node compiles to a ``Code``: the closure, whether it gives one value per glob member, and
upper bounds of its evaluation cost in steps (``shared.definition.conditions.values``) and of the
size of the values it gives. A parent output is at most ``INLINE_OUTPUT_BYTES`` of JSON, so its
size is known before anything runs; ``shared.definition.conditions.language`` refuses a condition
whose bound is over the budget. Reading parents (outputs, states, globs, fields) is in
``shared.definition.conditions.reads``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from shared.definition.conditions import values as cv
from shared.definition.conditions.reads import Code, Fn, MatchBudget, Reads
from shared.definition.conditions.values import COMPARISONS, Evaluation, Many
from shared.errors import ConditionError

__all__ = ["AGGREGATES", "FUNCTIONS", "Code", "ConditionCompiler", "Fn", "not_allowed"]

AGGREGATES = ("all", "any", "count")
FUNCTIONS = (*AGGREGATES, "state")
_CONSTANT_NAMES: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}


def literal_size(value: Any) -> int:
    if isinstance(value, str):
        return 1 + len(value) // cv.STRING_STEP_CHARS
    return 1


def _compare_cost(op: str, a: int, b: int) -> int:
    """Most steps one comparison of values of sizes ``a`` and ``b`` takes."""
    return a + b + 1 if op in ("In", "NotIn") else min(a, b) + 1


class ConditionCompiler(Reads):
    """Turns an allowlisted AST into closures (``compile`` -> ``Code``)."""

    def __init__(
        self, source: str, parents: Sequence[str], glob_budget: int, shared_budget: MatchBudget
    ) -> None:
        self.source = source
        self.parents = list(parents)
        self.parent_set = frozenset(self.parents)
        self.used: list[str] = []
        self.globs: dict[str, tuple[str, ...]] = {}
        self.glob_budget = glob_budget
        self.shared_budget = shared_budget
        """Name tests left for matching globs against the parents (each costs one pass)."""
        self.costliest: tuple[int, str] = (0, "")
        """The most expensive comparison or aggregate seen, and its text (for error messages)."""

    def text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def compile(self, node: ast.AST) -> Code:
        method: Callable[[Any], Code] | None = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise not_allowed(node)
        return method(node)

    def one(self, node: ast.AST, role: str) -> Code:
        code = self.compile(node)
        if code.many:
            raise ConditionError(
                f"{self.text(node)!r} gives one value per glob member and cannot be used as"
                f" {role}: reduce it with all(...), any(...) or count(...)"
            )
        return code

    def note(self, code: Code, node: ast.AST) -> Code:
        if code.cost > self.costliest[0]:
            self.costliest = (code.cost, self.text(node))
        return code

    # -- literals and names ---------------------------------------------------------------
    def _Constant(self, node: ast.Constant) -> Code:
        value = node.value
        if value is not None and not isinstance(value, bool | int | float | str):
            raise ConditionError(f"literal {self.text(node)} is not allowed (use numbers, strings)")
        return Code(lambda _ev: value, False, 0, literal_size(value))

    def _Name(self, node: ast.Name) -> Code:
        if node.id in _CONSTANT_NAMES:
            value = _CONSTANT_NAMES[node.id]
            return Code(lambda _ev: value, False, 0, 1)
        if node.id == "inputs":
            raise ConditionError(
                'name a parent after inputs: inputs.<task>, inputs["<task>"] or inputs["<glob>*"]'
            )
        if node.id in FUNCTIONS:
            raise ConditionError(f"{node.id} is a function: call it, e.g. {node.id}(...)")
        raise ConditionError(
            f'unknown name {node.id!r}: use inputs.<task>, state("<task>"), true, false or null'
            " (quote strings)"
        )

    def _List(self, node: ast.List | ast.Tuple) -> Code:
        items = [self.one(elt, "a list element") for elt in node.elts]
        fns = [c.fn for c in items]

        def make_list(ev: Evaluation) -> list[Any]:
            ev.spend(len(fns))
            return [f(ev) for f in fns]

        cost = sum(c.cost for c in items) + len(items)
        return Code(make_list, False, cost, 1 + sum(c.size for c in items))

    _Tuple = _List

    # -- operators ------------------------------------------------------------------------
    def _UnaryOp(self, node: ast.UnaryOp) -> Code:
        operand = self.one(node.operand, "an operand")
        fn, text = operand.fn, self.text(node.operand)
        if isinstance(node.op, ast.Not):

            def not_(ev: Evaluation) -> bool:
                return not cv.as_bool(fn(ev), text, "not")

            return Code(not_, False, operand.cost + 1, 1)
        if isinstance(node.op, ast.USub | ast.UAdd):
            sign = -1 if isinstance(node.op, ast.USub) else 1

            def signed(ev: Evaluation) -> Any:
                value = fn(ev)
                if not cv.is_number(value):
                    raise ConditionError(f"{text}: expected a number, got {cv.show(value)}")
                return sign * value

            return Code(signed, False, operand.cost + 1, 1)
        raise not_allowed(node)

    def _BoolOp(self, node: ast.BoolOp) -> Code:
        word = "and" if isinstance(node.op, ast.And) else "or"
        codes = [self.one(v, f"an operand of {word}") for v in node.values]
        operands = [(c.fn, self.text(v)) for c, v in zip(codes, node.values, strict=True)]
        cost = sum(c.cost + 1 for c in codes)
        if word == "and":

            def and_(ev: Evaluation) -> bool:
                ev.spend(len(operands))
                return all(cv.as_bool(f(ev), text, "and") for f, text in operands)

            return Code(and_, False, cost, 1)

        def or_(ev: Evaluation) -> bool:
            ev.spend(len(operands))
            return any(cv.as_bool(f(ev), text, "or") for f, text in operands)

        return Code(or_, False, cost, 1)

    def _Compare(self, node: ast.Compare) -> Code:
        for op in node.ops:
            if type(op).__name__ not in COMPARISONS:
                word = "is" if isinstance(op, ast.Is | ast.IsNot) else type(op).__name__
                raise ConditionError(f"operator {word!r} is not allowed: use == or !=")
        codes = [self.compile(n) for n in (node.left, *node.comparators)]
        texts = [self.text(n) for n in (node.left, *node.comparators)]
        names = [type(op).__name__ for op in node.ops]
        if any(c.many for c in codes):
            return self.note(self._compare_many(node, codes, texts, names[0]), node)
        ops = [COMPARISONS[name] for name in names]
        fns = [c.fn for c in codes]

        def compare(ev: Evaluation) -> bool:
            left = fns[0](ev)
            for i, op in enumerate(ops):
                right = fns[i + 1](ev)
                if not op(ev, left, right, texts[i], texts[i + 1]):
                    return False
                left = right
            return True

        cost = sum(c.cost for c in codes) + sum(
            _compare_cost(name, codes[i].size, codes[i + 1].size) for i, name in enumerate(names)
        )
        return self.note(Code(compare, False, cost, 1), node)

    def _compare_many(
        self, node: ast.Compare, codes: list[Code], texts: list[str], name: str
    ) -> Code:
        if len(node.ops) != 1:
            raise ConditionError(
                f"{self.text(node)!r}: a glob cannot be used in a chained comparison"
            )
        left, right = codes
        lfn, rfn, op = left.fn, right.fn, COMPARISONS[name]
        operands = left.cost + right.cost
        if right.many and name in ("In", "NotIn") and not left.many:
            # `x in inputs["t*"].label`: membership in the members' values (one result).
            def member(ev: Evaluation) -> bool:
                return op(ev, lfn(ev), list(rfn(ev)), texts[0], texts[1])

            each = min(left.size, right.size) + 1
            return Code(member, False, operands + 1 + right.members * each, 1)
        if left.many and right.many:
            raise ConditionError(
                f"{self.text(node)!r}: compare a glob with a single value, not with another glob"
            )
        members = max(left.members, right.members)
        cost = operands + members * _compare_cost(name, left.size, right.size)
        if left.many:

            def each_left(ev: Evaluation) -> Many:
                other = rfn(ev)
                return Many(op(ev, v, other, texts[0], texts[1]) for v in lfn(ev))

            return Code(each_left, True, cost, 1, members)

        def each_right(ev: Evaluation) -> Many:
            other = lfn(ev)
            return Many(op(ev, other, v, texts[0], texts[1]) for v in rfn(ev))

        return Code(each_right, True, cost, 1, members)

    # -- calls ----------------------------------------------------------------------------
    def _Call(self, node: ast.Call) -> Code:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ConditionError(
                f"call {self.text(node.func)!r} is not allowed: the only functions are"
                " all(...), any(...), count(...) and state(...)"
            )
        name = node.func.id
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            raise ConditionError(f"{name}(...) takes exactly one argument")
        arg = node.args[0]
        if name == "state":
            return self._state(arg)
        code = self.compile(arg)
        fn, many, text, reduce = code.fn, code.many, self.text(arg), cv.AGGREGATES[name]

        def aggregate(ev: Evaluation) -> Any:
            values = fn(ev)
            if not many and not isinstance(values, list):
                raise ConditionError(
                    f'{name}({text}): expected a glob such as inputs["train*"] or a list,'
                    f" got {cv.show(values)}"
                )
            return reduce(ev, values, text)

        length = code.members if many else code.size  # (a list has at most `size` items)
        return self.note(Code(aggregate, False, code.cost + length, 1), node)


_FORBIDDEN_NAMES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.BinOp: "arithmetic (+ - * / ...)",
    ast.IfExp: "'x if c else y' expressions",
    ast.NamedExpr: "':=' assignments",
    ast.Dict: "mapping literals",
    ast.Set: "set literals",
    ast.JoinedStr: "f-strings",
    ast.Starred: "'*' unpacking",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices",
}


def not_allowed(node: ast.AST) -> ConditionError:
    what = _FORBIDDEN_NAMES.get(type(node), type(node).__name__)
    hint = ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        # `inputs.extract-a.rows` parses as a subtraction: the name needs brackets.
        hint = '; for a task name with "-", write inputs["extract-a"]'
    return ConditionError(
        f"{what} are not allowed in a condition (allowed: comparisons, and/or/not, literals,"
        f" inputs.<task>..., state(...), all/any/count(...)){hint}"
    )
