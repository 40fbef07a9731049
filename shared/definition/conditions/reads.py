"""Conditions reading their parents: ``inputs.<task>``, ``inputs["<glob>"]``, ``state(...)``,
``.field`` and ``[index]``, with the cost bounds of each
(``shared.definition.conditions.compile``)."""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from shared.definition.conditions import values as cv
from shared.definition.conditions.values import Evaluation, Many
from shared.errors import ConditionBudgetError, ConditionError
from shared.messages import INLINE_OUTPUT_BYTES

OUTPUT_SIZE = INLINE_OUTPUT_BYTES // 2 + 1
"""Most JSON nodes of an inline output (``[0,0,...]``: two bytes each): its size bound."""
_GLOB_CHARS = re.compile(r"[*?\[]")
_COMPLETED = "completed"
Fn = Callable[[Evaluation], Any]


class MatchBudget:
    """Name tests that glob matching may still take, shared by the conditions of a validation
    (each condition also has its own budget)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit


class Code(NamedTuple):
    """One compiled node."""

    fn: Fn
    many: bool
    """It gives a ``Many`` (one value per glob member)."""
    cost: int
    """Most steps one evaluation of it can take (over all members)."""
    size: int
    """Most steps comparing one of its values can take (a JSON node count, roughly)."""
    members: int = 1
    """Most members it gives (1 unless ``many``)."""


class Reads:
    """The parent-reading half of ``ConditionCompiler``."""

    parents: list[str]
    parent_set: frozenset[str]
    used: list[str]
    """Parents read, in order (with repeats)."""
    globs: dict[str, tuple[str, ...]]
    """Glob pattern -> its members (each pattern is matched once)."""
    glob_budget: int
    """Name tests left for matching globs against the parents."""
    shared_budget: MatchBudget
    """The name tests left to every condition of one validation."""

    def text(self, node: ast.AST) -> str:
        raise NotImplementedError

    def compile(self, node: ast.AST) -> Code:
        raise NotImplementedError

    def _state(self, arg: ast.AST) -> Code:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            raise ConditionError('state(...) takes a quoted parent name or glob: state("train")')
        pattern = arg.value
        if _GLOB_CHARS.search(pattern):
            members = self.glob(pattern)

            def states(ev: Evaluation) -> Many:
                return Many(ev.view(p).state for p in members)

            return Code(states, True, len(members), 1, len(members))
        parent = self.parent(pattern)
        return Code(lambda ev: ev.view(parent).state, False, 1, 1)

    def _Attribute(self, node: ast.Attribute) -> Code:
        if node.attr.startswith("_"):
            raise ConditionError(
                f"field {node.attr!r} is not allowed (names starting with '_' are reserved);"
                f' use ["{node.attr}"] to read such a key'
            )
        return self._access(node, node.value, node.attr)

    def _Subscript(self, node: ast.Subscript) -> Code:
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

    def _access(self, node: ast.AST, base: ast.AST, key: str | int) -> Code:
        text = self.text(node)
        if isinstance(base, ast.Name) and base.id == "inputs":
            return self._parent_output(key, text)
        code = self.compile(base)
        fn, base_text = code.fn, self.text(base)
        if code.many:

            def each(ev: Evaluation) -> Many:
                return Many(cv.get(ev, v, key, text, base_text) for v in fn(ev))

            return code._replace(fn=each, cost=code.cost + code.members)
        return code._replace(
            fn=lambda ev: cv.get(ev, fn(ev), key, text, base_text), cost=code.cost + 1
        )

    def _parent_output(self, key: str | int, text: str) -> Code:
        if not isinstance(key, str):
            raise ConditionError(f'{text!r}: name a parent with a string: inputs["<task>"]')
        if _GLOB_CHARS.search(key):
            members = self.glob(key)

            def outputs(ev: Evaluation) -> Many:
                views = [ev.view(p) for p in members]
                return Many(v.output for v in views if v.state == _COMPLETED)

            return Code(outputs, True, len(members), OUTPUT_SIZE, len(members))
        parent = self.parent(key)

        def output(ev: Evaluation) -> Any:
            view = ev.view(parent)
            if view.output is None and view.state != _COMPLETED:
                raise ConditionError(
                    f"{text}: parent {parent!r} has no output (it is {view.state})"
                )
            return view.output

        return Code(output, False, 1, OUTPUT_SIZE)

    def parent(self, name: str) -> str:
        if name not in self.parent_set:
            raise ConditionError(
                f"the condition reads {name!r}, which is not a dependency of this task"
                f" (dependencies: {cv.list_names(self.parents)})"
            )
        self.used.append(name)
        return name

    def glob(self, pattern: str) -> tuple[str, ...]:
        found = self.globs.get(pattern)
        if found is not None:
            return found
        self.glob_budget -= len(self.parents)
        self.shared_budget.left -= len(self.parents)
        if self.glob_budget < 0:
            raise ConditionBudgetError(
                f"the condition has too many different globs ({len(self.globs) + 1} or more) for"
                f" the task's {len(self.parents):,} dependencies: use fewer globs"
            )
        if self.shared_budget.left < 0:
            raise ConditionBudgetError(
                "the workflow's conditions match their globs against too many dependencies in"
                f" all (more than {self.shared_budget.limit:,} names): use fewer globs, or glob"
                " fewer dependencies"
            )
        regex = re.compile(fnmatch.translate(pattern))
        members = tuple(p for p in self.parents if regex.match(p))
        if not members:
            raise ConditionError(
                f"the glob {pattern!r} matches none of this task's dependencies"
                f" ({cv.list_names(self.parents)})"
            )
        self.used.extend(members)
        self.globs[pattern] = members
        return members
