"""Read the Bicep templates under infra/ the way the tests need them, offline.

No Bicep compiler can run here, so ``pycep-parser`` turns each file into a JSON-like tree and this
module evaluates the simple expressions the tests care about (names built from the prefix,
parameter defaults, property paths) with a small interpreter.

pycep gives identifiers and string literals the same shape (``name: storageName`` and
``kind: 'StorageV2'`` both become a Python ``str``), so a bare string is read as an identifier when
the environment defines it and as a literal otherwise. Anything the interpreter does not know (an
unknown function, a resource property only Azure knows) evaluates to an :class:`Opaque` value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pycep import BicepParser

from tests.infra.arm_functions import FUNCTIONS, arm_text

REPO = Path(__file__).resolve().parents[2]
INFRA = REPO / "infra"
MODULES = INFRA / "modules"

# One regex per kind of top-level declaration, to check that the parser dropped none of them.
_DECLARATION = re.compile(r"^(param|var|resource|module|output)\s+(\w+)", re.MULTILINE)
_SECTION = {
    "param": "parameters",
    "var": "variables",
    "resource": "resources",
    "module": "modules",
    "output": "outputs",
}


@dataclass(frozen=True)
class Opaque:
    """A value only Azure can compute (a resource id, an endpoint, uniqueString(...))."""

    expression: str


def bicep_files() -> list[Path]:
    """Every .bicep file of the deployment."""
    return sorted(INFRA.rglob("*.bicep"))


@functools.cache
def _parser() -> BicepParser:
    return BicepParser()  # building the grammar takes a while: one parser for the session


@functools.cache
def parse(path: Path) -> dict[str, Any]:
    """The pycep tree of one file (raises on a syntax error)."""
    # pycep types its result as a TypedDict; the tests walk it as plain dicts.
    return cast(dict[str, Any], _parser().parse(file_path=path))


def declarations(path: Path) -> dict[str, set[str]]:
    """Names declared at the top level of a file, by pycep section, read with a regex."""
    found: dict[str, set[str]] = {section: set() for section in _SECTION.values()}
    for keyword, name in _DECLARATION.findall(path.read_text()):
        found[_SECTION[keyword]].add(name)
    return found


@functools.cache
def _parse_expression(text: str) -> Any:
    return _parser().parse(text=f"var expression = {text}\n")["variables"]["expression"]["value"]


def evaluate_expression(text: str, env: Mapping[str, Any] | None = None) -> Any:
    """The value of one Bicep expression, with ``env`` as its symbols (the ARM function tests)."""
    return _Evaluator(env or {}).value(_parse_expression(text))


class Template:
    """One parsed .bicep file with an environment for evaluating its expressions."""

    def __init__(self, path: Path, params: Mapping[str, Any] | None = None) -> None:
        self.path = path
        self.tree = parse(path)
        self.env: dict[str, Any] = {}
        for name, param in self.parameters.items():
            if params is not None and name in params:
                self.env[name] = params[name]
            elif param.get("default") is not None:
                self.env[name] = self.evaluate(param["default"])
            else:
                self.env[name] = Opaque(name)  # a required parameter nobody passed
        # Variables may refer to earlier ones: evaluate in file order.
        for name, var in self.tree.get("variables", {}).items():
            self.env[name] = self.evaluate(var["value"])

    # -- the file's sections ---------------------------------------------------------------
    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.tree.get("parameters", {}))

    @property
    def resources(self) -> dict[str, Any]:
        return dict(self.tree.get("resources", {}))

    @property
    def modules(self) -> dict[str, Any]:
        return dict(self.tree.get("modules", {}))

    @property
    def outputs(self) -> dict[str, Any]:
        return dict(self.tree.get("outputs", {}))

    def default(self, param: str) -> Any:
        """A parameter's default value, evaluated."""
        return self.evaluate(self.tree["parameters"][param]["default"])

    def decorator(self, param: str, kind: str) -> Any:
        """The argument of a parameter's decorator (``allowed``, ``min_value``...) or None."""
        for decorator in self.tree["parameters"][param]["decorators"]:
            if decorator["type"] == kind:
                return decorator["argument"]
        return None

    def resources_of_type(self, azure_type: str) -> dict[str, dict[str, Any]]:
        """Resources of one type, by symbolic name."""
        return {name: res for name, res in self.resources.items() if res["type"] == azure_type}

    @staticmethod
    def body(declaration: dict[str, Any]) -> dict[str, Any]:
        """A resource's or module's object, under its condition or loop if it has one."""
        config: dict[str, Any] = declaration["config"]
        if "condition" in config and "config" in config and isinstance(config["config"], dict):
            inner: dict[str, Any] = config["config"]
            return inner
        return config

    @staticmethod
    def condition(declaration: dict[str, Any]) -> Any:
        return declaration["config"].get("condition")

    def names_of(self, declaration: dict[str, Any]) -> list[Any]:
        """The evaluated name(s) of a resource: one, or one per loop iteration."""
        config = declaration["config"]
        loop = config.get("loop_type")
        if loop is None:
            return [self.evaluate(self.body(declaration)["name"])]
        detail = loop["detail"]
        items = self.evaluate(detail["array_name"])
        return [
            self.evaluate(config["config"]["name"], {detail["item_name"]: item}) for item in items
        ]

    # -- the interpreter -------------------------------------------------------------------
    def evaluate(self, node: Any, local: Mapping[str, Any] | None = None) -> Any:
        """The value of a pycep expression in this file's environment (plus ``local``)."""
        env = {**self.env, **(local or {})}
        return _Evaluator(env).value(node)


class _Evaluator:
    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env = env

    def value(self, node: Any) -> Any:
        if isinstance(node, str):
            if "${" in node:
                return self.interpolate(node)
            return self.env[node] if node in self.env else _unescape(node)
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if isinstance(node, dict):
            # An object property may be called "operator" too (autoscale rules): an expression
            # node holds a dict with a "type" there.
            if isinstance(node.get("function"), dict) and "type" in node["function"]:
                return self.function(node["function"])
            if isinstance(node.get("operator"), dict) and "type" in node["operator"]:
                return self.operator(node["operator"])
            if "loop_type" in node:
                detail = node["loop_type"]["detail"]
                return [
                    _Evaluator({**self.env, detail["item_name"]: item}).value(node["config"])
                    for item in self.value(detail["array_name"])
                ]
            return {_unquote(key): self.value(item) for key, item in node.items()}
        return node

    def interpolate(self, text: str) -> Any:
        parts: list[Any] = []
        for literal, expression in _split_interpolation(text):
            parts.append(_unescape(literal))
            if expression is not None:
                parts.append(self.value(_parse_expression(expression)))
        if any(isinstance(part, Opaque) for part in parts):
            return Opaque(text)
        return "".join(arm_text(part) for part in parts)

    def function(self, call: dict[str, Any]) -> Any:
        parameters = call.get("parameters") or {}
        args = [self.value(arg) for arg in parameters.values() if arg is not None]
        implementation = FUNCTIONS.get(call["type"])
        if implementation is None or any(isinstance(arg, Opaque) for arg in args):
            return Opaque(call["type"])
        return implementation(*args)

    def operator(self, op: dict[str, Any]) -> Any:
        kind = op["type"]
        operands = op["operands"]
        if kind == "property_accessor":
            return self.access(operands["operand_1"], operands["operand_2"])
        if kind in ("add", "substract"):  # pycep's spelling
            left, right = self.value(operands["operand_1"]), self.value(operands["operand_2"])
            if isinstance(left, int) and isinstance(right, int):
                return left + right if kind == "add" else left - right
            return Opaque(kind)
        if kind in ("equals", "not_equals", "and", "or"):
            left, right = self.value(operands["operand_1"]), self.value(operands["operand_2"])
            if isinstance(left, Opaque) or isinstance(right, Opaque):
                return Opaque(kind)
            return {
                "equals": lambda: left == right,
                "not_equals": lambda: left != right,
                "and": lambda: bool(left) and bool(right),
                "or": lambda: bool(left) or bool(right),
            }[kind]()
        if kind == "not":
            operand = self.value(operands["bool_value"])
            return (not operand) if isinstance(operand, bool) else Opaque("not")
        if kind == "conditional":
            condition = self.value(operands["condition"])
            if isinstance(condition, bool):
                return self.value(operands["true_value" if condition else "false_value"])
            return Opaque("conditional")
        return Opaque(kind)

    def access(self, root: Any, path: Any) -> Any:
        # pycep nests a.b.c as accessor(a, accessor(b, c)).
        base = self.value(root)
        keys: list[str] = [symbol(root) or "?"]
        while (
            isinstance(path, dict) and path.get("operator", {}).get("type") == "property_accessor"
        ):
            keys.append(path["operator"]["operands"]["operand_1"])
            path = path["operator"]["operands"]["operand_2"]
        keys.append(path)
        for key in keys[1:]:
            if isinstance(base, Mapping) and isinstance(key, str) and key in base:
                base = base[key]
            else:
                return Opaque(".".join(map(str, keys)))
        return base


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'", "$": "$"}


def _unescape(text: str) -> str:
    """A Bicep string literal's value (pycep keeps the escapes: ``\\n`` is two characters)."""
    if "\\" not in text:
        return text
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


def _unquote(key: str) -> str:
    return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == "'" else key


def _split_interpolation(text: str) -> Iterator[tuple[str, str | None]]:
    """``'a${b}c'`` -> ('a', 'b'), ('c', None); braces inside ``${...}`` are balanced."""
    start = 0
    while True:
        open_at = text.find("${", start)
        if open_at < 0:
            yield text[start:], None
            return
        depth, index = 1, open_at + 2
        while depth:
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        yield text[start:open_at], text[open_at + 2 : index - 1]
        start = index


def symbol(node: Any) -> str | None:
    """The root symbol of a reference such as ``appIdentity.properties.principalId``."""
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and "operator" in node:
        return symbol(node["operator"]["operands"]["operand_1"])
    return None


def module_template(main: Template, module: str) -> Template:
    """A module of ``main`` with the parameters ``main`` passes to it, evaluated where possible."""
    declaration = main.modules[module]
    path = (main.path.parent / declaration["detail"]["path"]).resolve()
    params = {
        name: main.evaluate(value)
        for name, value in Template.body(declaration).get("params", {}).items()
    }
    return Template(path, params)


@functools.cache
def deployment() -> tuple[Template, dict[str, Template]]:
    """main.bicep and each of its modules, with the parameters main passes (main's defaults).

    Modules are evaluated in file order, and each module's outputs become visible to the modules
    after it (``storage.outputs.eventQueueName``), as in a real deployment.
    """
    main = Template(INFRA / "main.bicep")
    modules: dict[str, Template] = {}
    for name in main.modules:
        module = module_template(main, name)
        modules[name] = module
        main.env[name] = {
            "outputs": {key: module.evaluate(out["value"]) for key, out in module.outputs.items()}
        }
    return main, modules
