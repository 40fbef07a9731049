"""Workflow parameters (``params:``): their types, the values given at submit, and
``{{ params.NAME }}`` in a task that has no ``foreach``.

- A parameter is declared as its default (string, number or bool), as ``{default, description,
  type}``, or as null; without a default it is required. Its type is the ``type`` written, else
  the default's, else ``string``.
- Values given at submit are text (``--param lr=0.01``, ``?param=lr=0.01``): ``coerce`` reads
  them as the declared type (a number as ``3`` or ``0.01``, a bool as ``true`` / ``false``).
- In a task's ``kwargs.cmd``, env values and ``cwd``, ``{{ params.NAME }}`` is filled the way a
  foreach value is (``shared.definition.templating``): one shell word in ``cmd`` (a value with a
  line break is read from ``"$DAGQ_PARAM_NAME"``), the plain text elsewhere. In a task without
  ``foreach``, only the ``{{ params.NAME }}`` placeholders are templates: any other ``{{ ... }}``
  stays the text it is, as before parameters existed (the ai4s-jobq format runs unchanged).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from shared.definition.spec import ParamDeclaration, ParamSpec, ParamType, Scalar
from shared.definition.templating import PARAMS_PREFIX, Template, render_value

_PARAM_RE = re.compile(r"\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""A well-formed parameter placeholder."""
_ANY_PARAM_RE = re.compile(r"\{\{\s*params\b[^}]*\}\}")
"""Anything that looks like one (a malformed one is reported)."""
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_RE = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_MAX_INT_DIGITS = 18


def param_type(declared: ParamDeclaration) -> ParamType:
    """The type of a declared parameter (``type``, else its default's, else ``string``)."""
    default = declared
    if isinstance(declared, ParamSpec):
        if declared.type is not None:
            return declared.type
        default = declared.default
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int | float):
        return "number"
    return "string"


def default_of(declared: ParamDeclaration) -> Scalar | None:
    """The default of a declared parameter (None: the parameter is required)."""
    return declared.default if isinstance(declared, ParamSpec) else declared


def description_of(declared: ParamDeclaration) -> str | None:
    return declared.description if isinstance(declared, ParamSpec) else None


def has_type(value: Scalar, kind: ParamType) -> bool:
    """Whether a default written in the definition is of the parameter's type."""
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


def coerce(text: str, kind: ParamType) -> Scalar | None:
    """``text`` (a value given at submit) read as ``kind``; None if it is not one."""
    if kind == "string":
        return text
    if kind == "bool":
        return {"true": True, "false": False}.get(text.strip())
    stripped = text.strip()
    if _INT_RE.match(stripped) and len(stripped.lstrip("+-")) <= _MAX_INT_DIGITS:
        return int(stripped)
    if _FLOAT_RE.match(stripped):
        number = float(stripped)
        return number if math.isfinite(number) else None
    return None


def type_hint(kind: ParamType) -> str:
    """How to write a value of ``kind`` at submit."""
    return {
        "string": "any text",
        "number": "a number such as 3 or 0.01",
        "bool": "true or false",
    }[kind]


def variables(values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The template variables of the parameters: ``{"params.NAME": value}``."""
    return {PARAMS_PREFIX + name: value for name, value in values.items()}


def as_text(values: Mapping[str, Scalar]) -> dict[str, str]:
    """Each parameter's value as a task sees it in ``DAGQ_PARAM_<NAME>`` (``true``, ``0.01``)."""
    return {name: render_value(value) for name, value in values.items()}


def uses_params(text: str | None) -> bool:
    """Whether ``text`` may hold a parameter placeholder (a cheap test before splitting)."""
    return text is not None and "{{" in text and "params" in text


def malformed_placeholder(text: str) -> str | None:
    """The first ``{{ params... }}`` that is not ``{{ params.NAME }}``, if any."""
    for match in _ANY_PARAM_RE.finditer(text):
        if not _PARAM_RE.fullmatch(match.group(0)):
            return match.group(0)
    return None


def split_params(text: str) -> Template:
    """``text`` split at its ``{{ params.NAME }}`` placeholders only (variables ``params.NAME``);
    every other ``{{ ... }}`` stays literal text."""
    parts: list[str] = []
    pos = 0
    for match in _PARAM_RE.finditer(text):
        parts.append(text[pos : match.start()])
        parts.append(PARAMS_PREFIX + match.group(1))
        pos = match.end()
    parts.append(text[pos:])
    return Template(tuple(parts))


def without_params(text: str) -> str:
    """``text`` with its ``{{ params.NAME }}`` placeholders left out."""
    return _PARAM_RE.sub("", text)


_ANY_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")


def misspelled(text: str, declared: Mapping[str, object]) -> str | None:
    """A placeholder that is surely meant as a parameter but is not written as one:
    ``{{ lr }}`` or ``{{ param.lr }}`` for a declared ``lr`` (in a task without foreach it would
    stay literal text). None if there is none."""
    if "{{" not in text:
        return None
    for match in _ANY_PLACEHOLDER_RE.finditer(text):
        name = match.group(1)
        bare = name.split(".", 1)[1] if name.startswith("param.") else name
        if bare in declared:
            return match.group(0)
    return None
