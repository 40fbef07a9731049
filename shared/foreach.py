"""foreach: fan one written task out over parameters, with shell-safe ``{{ param }}`` templates.

- Expansion order: a list of mappings expands in list order; a matrix (parameter -> values) expands
  to the product of its lists in declared order, the last parameter varying fastest
  (``{seed: [1, 2], lr: [0.1, 0.01]}`` -> seed=1/lr=0.1, seed=1/lr=0.01, seed=2/lr=0.1, ...).
- Names: ``{task}.{param}={value}`` for each parameter in order, e.g. ``train.seed=1.lr=0.1``. A
  value that is not a short run of ``A-Z a-z 0-9 _ . -`` is written as ``_`` plus 8 hex digits of
  its SHA-256 instead; a name that would exceed 128 characters becomes ``{task}.{index}``.
- Templates: ``{{ param }}`` in cmd is replaced by the value quoted with ``shlex.quote`` (one shell
  word whatever the value holds); in env, cwd and queue by the raw value (the compiler then
  validates the result). Values render as YAML/JSON wrote them: ``true``/``false``, ``0.1``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from shared.errors import TemplateSyntaxError
from shared.names import TASK_NAME_RE

Param = str | int | float | bool
Params = dict[str, Param]

TEMPLATE_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
"""Anything between ``{{`` and ``}}``; the inside must be one parameter name."""
_PARAM_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
_READABLE_VALUE_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,31}$")
_MAX_NAME = 128


@dataclass(frozen=True)
class Template:
    """A string with ``{{ param }}`` placeholders, split once so rendering is a join."""

    parts: tuple[str, ...]
    """Literal text, alternating with parameter names: text, name, text, name, ..., text."""

    @property
    def variables(self) -> tuple[str, ...]:
        return self.parts[1::2]

    def render(self, params: Mapping[str, Param], *, quote: bool) -> str:
        """Substitute every placeholder; ``quote`` shell-quotes each value as one shell word."""
        if len(self.parts) == 1:
            return self.parts[0]
        out: list[str] = []
        for i, part in enumerate(self.parts):
            if i % 2 == 0:
                out.append(part)
            else:
                text = render_value(params[part])
                out.append(shlex.quote(text) if quote else text)
        return "".join(out)


def parse_template(text: str) -> Template:
    """Split ``text`` into literal parts and parameter names; raise TemplateSyntaxError."""
    parts: list[str] = []
    pos = 0
    for match in TEMPLATE_RE.finditer(text):
        inner = _PARAM_RE.match(match.group(1))
        if inner is None:
            shown = match.group(0) if len(match.group(0)) <= 40 else match.group(0)[:37] + "..."
            raise TemplateSyntaxError(
                f"invalid placeholder {shown!r}: write {{{{ name }}}} with one foreach parameter"
                " name (letters, digits, '_')"
            )
        parts.append(text[pos : match.start()])
        parts.append(inner.group(1))
        pos = match.end()
    parts.append(text[pos:])
    return Template(tuple(parts))


def render_value(value: Param) -> str:
    """A parameter value as text, spelled as in YAML/JSON (``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest round-trip spelling: 0.1, 1.0, 1e-05
    return str(value)


def expansion_count(foreach: Sequence[Mapping[str, Param]] | Mapping[str, Sequence[Param]]) -> int:
    """How many tasks ``foreach`` expands to, without expanding it."""
    if isinstance(foreach, Mapping):
        count = 1
        for values in foreach.values():
            count *= len(values)
        return count
    return len(foreach)


def expand(
    foreach: Sequence[Mapping[str, Param]] | Mapping[str, Sequence[Param]],
) -> Iterator[Params]:
    """The parameter sets of ``foreach``, in expansion order."""
    if isinstance(foreach, Mapping):
        keys = list(foreach)
        for combo in itertools.product(*(foreach[k] for k in keys)):
            yield dict(zip(keys, combo, strict=True))
    else:
        for item in foreach:
            yield dict(item)


def expansion_name(task: str, params: Mapping[str, Param], index: int) -> str:
    """The deterministic, readable name of one expansion (see the module docstring)."""
    segments = [task]
    for key, value in params.items():
        segments.append(f"{key}={_name_value(value)}")
    name = ".".join(segments)
    if len(name) > _MAX_NAME or not TASK_NAME_RE.match(name):
        return f"{task}.{index}"
    return name


def _name_value(value: Param) -> str:
    text = render_value(value)
    if _READABLE_VALUE_RE.match(text) and ".." not in text and not text.endswith("."):
        return text
    return "_" + hashlib.sha256(text.encode()).hexdigest()[:8]
