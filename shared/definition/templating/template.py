"""``{{ variable }}`` templates: parsing, shell-safe rendering, and the ``DAGQ_VAR_*`` variables.

Used by ``foreach`` (variables are the foreach parameters) and by anything else that fills a
command from values (a dynamic fan-out's ``{{ item }}`` / ``{{ item.key }}``):

- ``parse_template(text)`` splits a template once; ``parse_command(text)`` does the same for a
  shell command and also refuses placeholders the shell would not read as a plain word
  (``shared.definition.templating.shell_lexer``), so a rendered command can never run a value as
  shell code.
- ``Template.render(values, quote=True)`` fills a command: each value becomes one shell word
  (``shlex.quote``; a value with a line break is read from its ``DAGQ_VAR_`` variable instead);
  ``quote=False`` fills text that is not shell (env values, cwd, queue).
- ``variable_env(values)`` is the environment every templated task also gets: one
  ``DAGQ_VAR_<name>`` per variable, ``.`` in a name becoming ``_`` (``item.lr`` ->
  ``DAGQ_VAR_item_lr``). Reading ``"$DAGQ_VAR_lr"`` (double-quoted) in the shell or
  ``os.environ["DAGQ_VAR_lr"]`` in a program is safe anywhere.

Values render as YAML/JSON spell them: ``true``/``false``, ``0.1``, ``null``; lists and objects
as compact JSON.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.definition.templating.shell_lexer import placement_problems
from shared.errors import TemplateSyntaxError

Value = str | int | float | bool | None | list[Any] | dict[str, Any]
"""A variable's value: a foreach parameter, or any JSON value."""

ENV_PREFIX = "DAGQ_VAR_"
"""Prefix of the environment variable that carries each template variable."""
PARAMS_PREFIX = "params."
"""Template variables named ``params.<NAME>`` are the workflow's parameters (``params:``)."""
PARAM_ENV_PREFIX = "DAGQ_PARAM_"
"""Prefix of the environment variable that carries each workflow parameter (the worker sets it
from the task message: ``shared.messages.TaskMessage.params``)."""
TEMPLATE_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
"""Anything between ``{{`` and ``}}``; the inside must be one variable name."""
_NAME_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*$")


@dataclass(frozen=True)
class Template:
    """A string with ``{{ name }}`` placeholders, split once so rendering is a join."""

    parts: tuple[str, ...]
    """Literal text, alternating with variable names: text, name, text, name, ..., text."""

    @property
    def variables(self) -> tuple[str, ...]:
        return self.parts[1::2]

    def render(self, values: Mapping[str, Value], *, quote: bool) -> str:
        """Substitute every placeholder; ``quote`` shell-quotes each value as one shell word."""
        if len(self.parts) == 1:
            return self.parts[0]
        out: list[str] = []
        for i, part in enumerate(self.parts):
            if i % 2 == 0:
                out.append(part)
            else:
                text = render_value(values[part])
                out.append(_shell_word(part, text) if quote else text)
        return "".join(out)


def _shell_word(name: str, text: str) -> str:
    """``text`` as one shell word. A value with a line break is read from its variable instead
    (``"$DAGQ_VAR_<name>"``, which every templated task has, with the same text): after a syntax
    error bash drops the rest of the *line* and runs the next one, so a line break inside single
    quotes would let the value's next line run as code in a command bash cannot parse."""
    if "\n" in text or "\r" in text:
        return f'"${env_var_name(name)}"'
    return shlex.quote(text)


def parse_template(text: str) -> Template:
    """Split ``text`` into literal parts and variable names; raise TemplateSyntaxError."""
    parts: list[str] = []
    pos = 0
    for match in TEMPLATE_RE.finditer(text):
        inner = _NAME_RE.match(match.group(1))
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


def parse_command(text: str) -> Template:
    """``parse_template`` for a shell command: also raise TemplateSyntaxError (with the fix) for
    the first placeholder that is not a plain shell word (inside quotes, a comment, ...)."""
    template = parse_template(text)
    if len(template.parts) == 1:
        return template
    for name, where in zip(template.variables, placement_problems(template.parts), strict=True):
        if where is not None:
            raise TemplateSyntaxError(unsafe_placement_message(name, where))
    return template


def unsafe_placement_message(name: str, where: str) -> str:
    """What a user reads for a placeholder the shell would not read as one plain word."""
    var = env_var_name(name)
    return (
        f"{{{{ {name} }}}} is {where}: there the shell would not read the value as one quoted"
        f' word, and a value such as "$(rm -rf ~)" could run. Read the variable {var} instead'
        f' ("${var}" in double quotes in the shell, os.environ["{var}"] in Python), or write'
        f" {{{{ {name} }}}} outside any quotes as a word of its own (dagq quotes the value:"
        f" --name {{{{ {name} }}}})"
    )


def render_value(value: Value) -> str:
    """A value as text, spelled as in YAML/JSON (``true``, not ``True``; objects as JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest round-trip spelling: 0.1, 1.0, 1e-05
    if value is None:
        return "null"
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def env_var_name(name: str) -> str:
    """The environment variable of template variable ``name``: ``DAGQ_VAR_`` + the name with each
    ``.`` as ``_`` (``seed`` -> ``DAGQ_VAR_seed``, ``item.lr`` -> ``DAGQ_VAR_item_lr``); a
    workflow parameter's is ``DAGQ_PARAM_<NAME>`` (``params.lr`` -> ``DAGQ_PARAM_lr``)."""
    if name.startswith(PARAMS_PREFIX):
        return PARAM_ENV_PREFIX + name[len(PARAMS_PREFIX) :]
    return ENV_PREFIX + name.replace(".", "_")


def variable_env(values: Mapping[str, Value]) -> dict[str, str]:
    """``{DAGQ_VAR_<name>: rendered value}`` for every variable; raise TemplateSyntaxError if two
    names give one variable (``a.b`` and ``a_b``)."""
    env: dict[str, str] = {}
    owner: dict[str, str] = {}
    for name, value in values.items():
        var = env_var_name(name)
        if var in owner:
            raise TemplateSyntaxError(
                f"variables {owner[var]!r} and {name!r} would both be passed as {var}:"
                " rename one of them"
            )
        owner[var] = name
        env[var] = render_value(value)
    return env
