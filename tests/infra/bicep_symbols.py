"""Symbol checks a Bicep compiler would make, done on tree-sitter-bicep's syntax tree.

No Bicep compiler can be installed here and neither parser resolves names, so this module finds
the mistakes that would otherwise surface only at deployment: a reference to a symbol that is not
declared, a call to a function Bicep does not have, and a module output that the module does not
declare (``storage.outputs.evntQueueName``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_bicep
from tree_sitter import Language, Node, Parser

# Bicep's functions and decorators that these templates may use (a subset of the language's list;
# add to it when a template needs another one).
FUNCTIONS = frozenset(
    {
        # decorators
        "description",
        "allowed",
        "minLength",
        "maxLength",
        "minValue",
        "maxValue",
        "secure",
        "metadata",
        # scope and deployment
        "subscription",
        "resourceGroup",
        "environment",
        "deployment",
        "subscriptionResourceId",
        "resourceId",
        "tenant",
        # strings, arrays, objects
        "toLower",
        "toUpper",
        "replace",
        "join",
        "split",
        "string",
        "int",
        "bool",
        "json",
        "empty",
        "union",
        "concat",
        "contains",
        "take",
        "skip",
        "length",
        "first",
        "last",
        "format",
        "guid",
        "uniqueString",
        "base64",
        "loadTextContent",
        "items",
        "filter",
        "map",
        "reduce",
        "range",
        "trim",
        "substring",
        "intersection",
        "difference",
        "fail",
    }
)

# Declarations that bind a name at the top level of a file.
_DECLARATIONS = {
    "parameter_declaration",
    "variable_declaration",
    "resource_declaration",
    "module_declaration",
    "output_declaration",
}


@dataclass
class Symbols:
    """What one file declares and what it refers to."""

    declared: set[str] = field(default_factory=set)
    undefined: list[str] = field(default_factory=list)
    """References to names nothing declares, as ``name (line N)``."""
    calls: set[str] = field(default_factory=set)
    module_outputs: list[tuple[str, str, int]] = field(default_factory=list)
    """(module symbol, output name, line) of every ``module.outputs.name``."""
    modules: dict[str, str] = field(default_factory=dict)
    """Module symbol -> the path it loads, relative to the file."""


@functools.cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bicep.language()))


def parse_tree(path: Path) -> Node:
    """The tree-sitter syntax tree of a file."""
    return _parser().parse(path.read_bytes()).root_node


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def symbols(path: Path) -> Symbols:
    """Declarations, unresolved references, calls and module output references of ``path``."""
    root = parse_tree(path)
    found = Symbols()
    for declaration in root.named_children:
        if declaration.type in _DECLARATIONS:
            name = declaration.named_children[0]
            found.declared.add(_text(name))
            if declaration.type == "module_declaration":
                found.modules[_text(name)] = _text(declaration.named_children[1]).strip("'")
    for declaration in root.named_children:
        if declaration.type in _DECLARATIONS:
            for child in declaration.named_children[1:]:
                _references(child, found.declared, found)
        elif declaration.type == "decorators":
            _references(declaration, found.declared, found)
    return found


def _references(node: Node, scope: set[str], found: Symbols) -> None:
    kind = node.type
    if kind == "identifier":
        if _text(node) not in scope:
            found.undefined.append(f"{_text(node)} (line {node.start_point[0] + 1})")
        return
    if kind == "call_expression":
        function, *rest = node.named_children
        found.calls.add(_text(function))
        for child in rest:
            _references(child, scope, found)
        return
    if kind == "object_property":
        # The key is a name in the object, not a reference.
        for child in node.named_children[1:]:
            _references(child, scope, found)
        return
    if kind == "resource_expression":
        # parent::child names a nested resource of parent.
        _references(node.named_children[0], scope, found)
        return
    if kind == "for_statement":
        loop_scope = _loop_scope(node.named_children[0], scope)
        if loop_scope is not None:
            for child in node.named_children[1:]:
                _references(child, loop_scope, found)
            return
    if kind == "member_expression":
        _module_output(node, found)
    for child in node.named_children:
        _references(child, scope, found)


def _loop_scope(first: Node, scope: set[str]) -> set[str] | None:
    """The names a for loop whose first child is ``first`` adds to ``scope`` (None: not a loop
    variable)."""
    if first.type == "identifier":
        return scope | {_text(first)}
    if first.type == "for_loop_parameters":  # (item, index)
        return scope | {_text(n) for n in first.named_children}
    return None


def _module_output(node: Node, found: Symbols) -> None:
    # module.outputs.name parses as member(member(module, outputs), name).
    inner = node.named_children[0]
    if inner.type != "member_expression" or node.named_children[-1].type != "property_identifier":
        return
    base, middle = inner.named_children[0], inner.named_children[-1]
    if base.type == "identifier" and _text(middle) == "outputs":
        found.module_outputs.append(
            (_text(base), _text(node.named_children[-1]), node.start_point[0] + 1)
        )
