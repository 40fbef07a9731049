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
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from shared.errors import ConditionError

MAX_CONDITION_CHARS = 2000
"""Longest condition, in characters."""
MAX_CONDITION_DEPTH = 32
"""Deepest nesting of a condition's syntax tree."""
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
_GLOB_CHARS = re.compile(r"[*?\[]")
_COMPLETED = "completed"


@dataclass(frozen=True)
class ParentView:
    """What a condition sees of one parent: its state (a TaskState value) and its output."""

    state: str
    output: JsonValue = None


Inputs = Mapping[str, ParentView]
_Fn = Callable[[Inputs], Any]


class _Many(tuple[Any, ...]):
    """The values of a glob's members (kept apart from a JSON list, which is one value)."""

    __slots__ = ()


class Condition:
    """A compiled condition: immutable, reusable, safe to share between threads."""

    __slots__ = ("_fn", "parents", "source")

    source: str
    """The expression as written."""
    parents: tuple[str, ...]
    """The parents it reads (its evaluation needs a view of each)."""

    def __init__(self, source: str, fn: _Fn, parents: tuple[str, ...]) -> None:
        self.source = source
        self.parents = parents
        self._fn = fn

    def evaluate(self, inputs: Inputs) -> bool:
        """True or false; raises ConditionError saying why when it cannot decide."""
        try:
            result = self._fn(inputs)
        except ConditionError:
            raise
        except (RecursionError, MemoryError) as exc:  # defensive: inputs are untrusted outputs
            raise ConditionError(f"condition could not be evaluated: {type(exc).__name__}") from exc
        if not isinstance(result, bool):
            raise ConditionError(
                f"condition must be true or false, but it evaluated to {_show(result)}"
            )
        return result

    def __repr__(self) -> str:
        return f"Condition({self.source!r})"


def compile_condition(expr: str, parents: Sequence[str]) -> Condition:
    """Parse and check ``expr`` against the task's ``parents``; raise ConditionError."""
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
    compiler = _Compiler(text, parents)
    fn, many = compiler.compile(tree.body)
    if many:
        raise ConditionError(
            "the condition gives one value per glob member: reduce it with all(...), any(...)"
            " or count(...)"
        )
    return Condition(expr, fn, tuple(dict.fromkeys(compiler.used)))


# -- checking ---------------------------------------------------------------------------------

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


def _check_depth(tree: ast.AST) -> None:
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_CONDITION_DEPTH:
            raise ConditionError(
                f"condition is nested too deeply (more than {MAX_CONDITION_DEPTH} levels)"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _not_allowed(node: ast.AST) -> ConditionError:
    what = _FORBIDDEN_NAMES.get(type(node), type(node).__name__)
    hint = ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        # `inputs.extract-a.rows` parses as a subtraction: the name needs brackets.
        hint = '; for a task name with "-", write inputs["extract-a"]'
    return ConditionError(
        f"{what} are not allowed in a condition (allowed: comparisons, and/or/not, literals,"
        f" inputs.<task>..., state(...), all/any/count(...)){hint}"
    )


class _Compiler:
    """Turns an allowlisted AST into closures. Each ``compile`` returns (fn, many)."""

    def __init__(self, source: str, parents: Sequence[str]) -> None:
        self.source = source
        self.parents = list(parents)
        self.parent_set = frozenset(self.parents)
        self.used: list[str] = []

    def text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def compile(self, node: ast.AST) -> tuple[_Fn, bool]:
        method: Callable[[Any], tuple[_Fn, bool]] | None = getattr(
            self, "_" + type(node).__name__, None
        )
        if method is None:
            raise _not_allowed(node)
        return method(node)

    def one(self, node: ast.AST, role: str) -> _Fn:
        fn, many = self.compile(node)
        if many:
            raise ConditionError(
                f"{self.text(node)!r} gives one value per glob member and cannot be used as"
                f" {role}: reduce it with all(...), any(...) or count(...)"
            )
        return fn

    # -- literals and names ---------------------------------------------------------------
    def _Constant(self, node: ast.Constant) -> tuple[_Fn, bool]:
        value = node.value
        if value is not None and not isinstance(value, bool | int | float | str):
            raise ConditionError(f"literal {self.text(node)} is not allowed (use numbers, strings)")
        return (lambda _inputs: value), False

    def _Name(self, node: ast.Name) -> tuple[_Fn, bool]:
        if node.id in _CONSTANT_NAMES:
            value = _CONSTANT_NAMES[node.id]
            return (lambda _inputs: value), False
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

    def _List(self, node: ast.List | ast.Tuple) -> tuple[_Fn, bool]:
        items = [self.one(elt, "a list element") for elt in node.elts]
        return (lambda inputs: [f(inputs) for f in items]), False

    _Tuple = _List

    # -- operators ------------------------------------------------------------------------
    def _UnaryOp(self, node: ast.UnaryOp) -> tuple[_Fn, bool]:
        operand = self.one(node.operand, "an operand")
        text = self.text(node.operand)
        if isinstance(node.op, ast.Not):

            def not_(inputs: Inputs) -> bool:
                return not _as_bool(operand(inputs), text, "not")

            return not_, False
        if isinstance(node.op, ast.USub | ast.UAdd):
            sign = -1 if isinstance(node.op, ast.USub) else 1

            def signed(inputs: Inputs) -> Any:
                value = operand(inputs)
                if not _is_number(value):
                    raise ConditionError(f"{text}: expected a number, got {_show(value)}")
                return sign * value

            return signed, False
        raise _not_allowed(node)

    def _BoolOp(self, node: ast.BoolOp) -> tuple[_Fn, bool]:
        word = "and" if isinstance(node.op, ast.And) else "or"
        operands = [(self.one(v, f"an operand of {word}"), self.text(v)) for v in node.values]
        if word == "and":

            def and_(inputs: Inputs) -> bool:
                return all(_as_bool(f(inputs), text, "and") for f, text in operands)

            return and_, False

        def or_(inputs: Inputs) -> bool:
            return any(_as_bool(f(inputs), text, "or") for f, text in operands)

        return or_, False

    def _Compare(self, node: ast.Compare) -> tuple[_Fn, bool]:
        for op in node.ops:
            if type(op) not in _COMPARISONS:
                word = "is" if isinstance(op, ast.Is | ast.IsNot) else type(op).__name__
                raise ConditionError(f"operator {word!r} is not allowed: use == or !=")
        operands = [self.compile(n) for n in (node.left, *node.comparators)]
        texts = [self.text(n) for n in (node.left, *node.comparators)]
        if any(many for _, many in operands):
            return self._compare_many(node, operands, texts)
        ops = [_COMPARISONS[type(op)] for op in node.ops]

        def compare(inputs: Inputs) -> bool:
            left = operands[0][0](inputs)
            for i, op in enumerate(ops):
                right = operands[i + 1][0](inputs)
                if not op(left, right, texts[i], texts[i + 1]):
                    return False
                left = right
            return True

        return compare, False

    def _compare_many(
        self, node: ast.Compare, operands: list[tuple[_Fn, bool]], texts: list[str]
    ) -> tuple[_Fn, bool]:
        if len(node.ops) != 1:
            raise ConditionError(
                f"{self.text(node)!r}: a glob cannot be used in a chained comparison"
            )
        (left, left_many), (right, right_many) = operands
        op_type = type(node.ops[0])
        op = _COMPARISONS[op_type]
        if right_many and op_type in (ast.In, ast.NotIn) and not left_many:
            # `x in inputs["t*"].label`: membership in the members' values (one result).
            def member(inputs: Inputs) -> bool:
                return op(left(inputs), list(right(inputs)), texts[0], texts[1])

            return member, False
        if left_many and right_many:
            raise ConditionError(
                f"{self.text(node)!r}: compare a glob with a single value, not with another glob"
            )
        if left_many:

            def each_left(inputs: Inputs) -> _Many:
                other = right(inputs)
                return _Many(op(v, other, texts[0], texts[1]) for v in left(inputs))

            return each_left, True

        def each_right(inputs: Inputs) -> _Many:
            other = left(inputs)
            return _Many(op(other, v, texts[0], texts[1]) for v in right(inputs))

        return each_right, True

    # -- calls ----------------------------------------------------------------------------
    def _Call(self, node: ast.Call) -> tuple[_Fn, bool]:
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
        fn, many = self.compile(arg)
        text = self.text(arg)
        reduce = _AGGREGATE_FNS[name]

        def aggregate(inputs: Inputs) -> Any:
            values = fn(inputs)
            if not many and not isinstance(values, list):
                raise ConditionError(
                    f'{name}({text}): expected a glob such as inputs["train*"] or a list,'
                    f" got {_show(values)}"
                )
            return reduce(values, text)

        return aggregate, False

    def _state(self, arg: ast.AST) -> tuple[_Fn, bool]:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            raise ConditionError('state(...) takes a quoted parent name or glob: state("train")')
        pattern = arg.value
        if _GLOB_CHARS.search(pattern):
            members = self.glob(pattern)

            def states(inputs: Inputs) -> _Many:
                return _Many(_view(inputs, p).state for p in members)

            return states, True
        parent = self.parent(pattern)
        return (lambda inputs: _view(inputs, parent).state), False

    # -- reading outputs ------------------------------------------------------------------
    def _Attribute(self, node: ast.Attribute) -> tuple[_Fn, bool]:
        if node.attr.startswith("_"):
            raise ConditionError(
                f"field {node.attr!r} is not allowed (names starting with '_' are reserved);"
                f' use ["{node.attr}"] to read such a key'
            )
        return self._access(node, node.value, node.attr)

    def _Subscript(self, node: ast.Subscript) -> tuple[_Fn, bool]:
        key_node = node.slice
        if isinstance(key_node, ast.Constant) and isinstance(key_node.value, str | int):
            if isinstance(key_node.value, bool):
                raise ConditionError(f"{self.text(node)!r}: use a string key or an integer index")
            return self._access(node, node.value, key_node.value)
        if (
            isinstance(key_node, ast.UnaryOp)
            and isinstance(key_node.op, ast.USub)
            and isinstance(key_node.operand, ast.Constant)
            and type(key_node.operand.value) is int
        ):
            return self._access(node, node.value, -key_node.operand.value)
        raise ConditionError(
            f"{self.text(node)!r}: the key in [...] must be a quoted string or an integer"
        )

    def _access(self, node: ast.AST, base: ast.AST, key: str | int) -> tuple[_Fn, bool]:
        text = self.text(node)
        if isinstance(base, ast.Name) and base.id == "inputs":
            return self._parent_output(key, text)
        base_fn, many = self.compile(base)
        base_text = self.text(base)
        if many:

            def each(inputs: Inputs) -> _Many:
                return _Many(_get(v, key, text, base_text) for v in base_fn(inputs))

            return each, True
        return (lambda inputs: _get(base_fn(inputs), key, text, base_text)), False

    def _parent_output(self, key: str | int, text: str) -> tuple[_Fn, bool]:
        if not isinstance(key, str):
            raise ConditionError(f'{text!r}: name a parent with a string: inputs["<task>"]')
        if _GLOB_CHARS.search(key):
            members = self.glob(key)

            def outputs(inputs: Inputs) -> _Many:
                views = [_view(inputs, p) for p in members]
                return _Many(v.output for v in views if v.state == _COMPLETED)

            return outputs, True
        parent = self.parent(key)

        def output(inputs: Inputs) -> JsonValue:
            view = _view(inputs, parent)
            if view.output is None and view.state != _COMPLETED:
                raise ConditionError(
                    f"{text}: parent {parent!r} has no output (it is {view.state})"
                )
            return view.output

        return output, False

    def parent(self, name: str) -> str:
        if name not in self.parent_set:
            raise ConditionError(
                f"the condition reads {name!r}, which is not a dependency of this task"
                f" (dependencies: {_list_names(self.parents)})"
            )
        self.used.append(name)
        return name

    def glob(self, pattern: str) -> tuple[str, ...]:
        regex = re.compile(fnmatch.translate(pattern))
        members = tuple(p for p in self.parents if regex.match(p))
        if not members:
            raise ConditionError(
                f"the glob {pattern!r} matches none of this task's dependencies"
                f" ({_list_names(self.parents)})"
            )
        self.used.extend(members)
        return members


# -- runtime helpers --------------------------------------------------------------------------


def _view(inputs: Inputs, parent: str) -> ParentView:
    try:
        return inputs[parent]
    except KeyError:
        raise ConditionError(f"no state was given for parent {parent!r}") from None


def _get(value: Any, key: str | int, text: str, base_text: str) -> Any:
    if isinstance(key, str):
        if isinstance(value, dict):
            if key in value:
                return value[key]
            fields = _list_names(sorted(str(k) for k in value))
            raise ConditionError(f"{text}: {base_text} has no field {key!r} (fields: {fields})")
        raise ConditionError(
            f"{text}: cannot read field {key!r} of {_show(value)} ({base_text} is not an object)"
        )
    if isinstance(value, list):
        if -len(value) <= key < len(value):
            return value[key]
        raise ConditionError(f"{text}: index {key} is out of range ({len(value)} items)")
    raise ConditionError(f"{text}: cannot index {_show(value)} ({base_text} is not a list)")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_bool(value: Any, text: str, word: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConditionError(f"{word} needs true or false, but {text} is {_show(value)}")


def _equal(a: Any, b: Any) -> bool:
    # JSON semantics: true is not 1 (Python says it is).
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _order(symbol: str, test: Callable[[Any, Any], bool]) -> Callable[[Any, Any, str, str], bool]:
    def compare(a: Any, b: Any, ta: str, tb: str) -> bool:
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return test(a, b)
        raise ConditionError(
            f"cannot compare {ta} ({_show(a)}) {symbol} {tb} ({_show(b)}): both sides must be"
            " numbers or both strings"
        )

    return compare


def _contains(a: Any, b: Any, ta: str, tb: str) -> bool:
    if isinstance(b, list):
        return any(_equal(a, item) for item in b)
    if isinstance(b, str) and isinstance(a, str):
        return a in b
    if isinstance(b, dict) and isinstance(a, str):
        return a in b
    raise ConditionError(
        f"{ta} in {tb}: the right side must be a list, a string or an object, got {_show(b)}"
    )


_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any, str, str], bool]] = {
    ast.Eq: lambda a, b, _ta, _tb: _equal(a, b),
    ast.NotEq: lambda a, b, _ta, _tb: not _equal(a, b),
    ast.Lt: _order("<", lambda a, b: a < b),
    ast.LtE: _order("<=", lambda a, b: a <= b),
    ast.Gt: _order(">", lambda a, b: a > b),
    ast.GtE: _order(">=", lambda a, b: a >= b),
    ast.In: _contains,
    ast.NotIn: lambda a, b, ta, tb: not _contains(a, b, ta, tb),
}


def _all(values: Sequence[Any], text: str) -> bool:
    return all(_as_bool(v, f"a member of {text}", "all(...)") for v in values)


def _any(values: Sequence[Any], text: str) -> bool:
    return any(_as_bool(v, f"a member of {text}", "any(...)") for v in values)


def _count(values: Sequence[Any], _text: str) -> int:
    return sum(1 for v in values if v is not False)


_AGGREGATE_FNS: dict[str, Callable[[Sequence[Any], str], Any]] = {
    "all": _all,
    "any": _any,
    "count": _count,
}


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _Many):
        return f"{len(value)} glob members"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _list_names(names: Sequence[str], limit: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names)} in all)"
