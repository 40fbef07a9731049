"""Pass 1b, params: the workflow's parameters resolved (``Compilation.param_values``) from their
declarations and the values given at submit (``Options.params``), and the workflow's ``env``
with its ``{{ params.NAME }}`` filled (``Compilation.env``). Also ``fill``, which the expansion
pass runs on a task without ``foreach`` (``shared.definition.parameters``).

Every problem is reported: a name given at submit that is not declared ("did you mean"), a
required parameter without a value, a value that is not of the declared type, a default of
another type, too many or too long values, an env entry that would hide ``DAGQ_PARAM_<NAME>``
and a placeholder naming no declared parameter."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from shared.definition import parameters
from shared.definition.compilation import Compilation, environment_bytes
from shared.definition.spec import Scalar
from shared.definition.suggestions import Suggester
from shared.definition.templating import (
    PARAM_ENV_PREFIX,
    PARAMS_PREFIX,
    placement_problems,
)
from shared.definition.templating.template import unsafe_placement_message
from shared.limits import MAX_PARAM_CHARS, MAX_PARAMS, MAX_PARAMS_BYTES

_STAND_INS: dict[str, Scalar] = {"number": 0, "bool": False}
"""The value of a required parameter when none is needed (validating a definition alone)."""


def resolve_params(c: Compilation) -> None:
    """Fill ``param_values``, ``param_vars`` and ``env`` (see the module's docstring)."""
    declared, issues = c.spec.params, c.issues
    given: Mapping[str, str] = c.options.params or {}
    if len(declared) > MAX_PARAMS:
        issues.add("params", f"{len(declared)} parameters are declared; the limit is {MAX_PARAMS}")
    names = sorted(declared)
    for name in given:
        if name not in declared:
            issues.add(f"param {name}", partial(_undeclared, c.suggester, name, names))
    values: dict[str, Scalar] = {}
    for name, declaration in declared.items():
        kind = parameters.param_type(declaration)
        default = parameters.default_of(declaration)
        if default is not None and not parameters.has_type(default, kind):
            issues.add(f"params.{name}", f"the default {default!r} is not a {kind} (type: {kind})")
        if name in given:
            value = parameters.coerce(given[name], kind)
            if value is None:
                shown = given[name] if len(given[name]) <= 40 else given[name][:37] + "..."
                issues.add(
                    f"param {name}",
                    f"{name} is a {kind} parameter: {shown!r} is not {parameters.type_hint(kind)}",
                )
                value = ""
        elif default is not None:
            value = default
        elif not c.options.require_params:
            value = _STAND_INS[kind] if kind != "string" else f"<{name}>"
        else:
            issues.add(
                f"params.{name}",
                f"parameter {name!r} is required (it has no default): give it at submit"
                f" (dagq submit FILE --param {name}=VALUE)",
            )
            value = ""
        values[name] = value
    _check_values(c, values)
    c.param_values = values
    c.param_vars = parameters.variables(values)
    c.env = {
        key: fill(c, value, f"env.{key}", None, quote=False) for key, value in c.spec.env.items()
    }
    c.workflow_env_bytes = environment_bytes(c.env)


def _check_values(c: Compilation, values: dict[str, Scalar]) -> None:
    texts = parameters.as_text(values)
    for name, text in texts.items():
        if len(text) > MAX_PARAM_CHARS:
            c.issues.add(
                f"params.{name}",
                f"the value is {len(text):,} characters; the limit is {MAX_PARAM_CHARS:,}",
            )
        if "\x00" in text:
            c.issues.add(f"params.{name}", "parameter values must not contain NUL characters")
    size = sum(len(name) + len(text) for name, text in texts.items())
    if size > MAX_PARAMS_BYTES:
        c.issues.add(
            "params",
            f"the parameters' names and values are {size:,} characters; the limit is"
            f" {MAX_PARAMS_BYTES:,} (every task message carries them)",
        )
    hidden = {PARAM_ENV_PREFIX + name for name in values}
    for loc, env, task in (
        ("env", c.spec.env, None),
        *((f"tasks.{t.name}.kwargs.env", t.kwargs.env, t.name) for t in c.spec.tasks),
    ):
        for key in env.keys() & hidden:
            c.issues.add(
                f"{loc}.{key}",
                f"{key} is set by dagq to the value of parameter"
                f" {key.removeprefix(PARAM_ENV_PREFIX)!r}: remove it or rename it",
                task,
            )


def _undeclared(suggester: Suggester, name: str, names: list[str]) -> str:
    if not names:
        return f"the workflow declares no parameters, so {name!r} cannot be set (add params:)"
    return (
        f"no parameter {name!r} is declared{suggester.hint(name, names)}"
        f" (params: {', '.join(names)})"
    )


def unknown_param(suggester: Suggester, var: str, names: list[str]) -> str:
    """The message for ``{{ params.X }}`` naming no declared parameter."""
    name = var.removeprefix(PARAMS_PREFIX)
    declared = f"params: {', '.join(names)}" if names else "the workflow declares no params"
    return f"unknown parameter {{{{ params.{name} }}}}{suggester.hint(name, names)} ({declared})"


def fill(c: Compilation, text: str, loc: str, task: str | None, *, quote: bool) -> str:
    """``text`` of a task without foreach (or of the workflow's env) with its ``{{ params.NAME
    }}`` filled; each problem reported at ``loc`` (the text is returned as is then)."""
    if c.spec.params and (wrong := parameters.misspelled(text, c.spec.params)) is not None:
        name = wrong.strip("{} ").removeprefix("param.")
        c.issues.add(
            loc,
            f"{wrong} is not a template here: write {{{{ params.{name} }}}} for the parameter",
            task,
        )
        return text
    if not parameters.uses_params(text):
        return text
    bad = parameters.malformed_placeholder(text)
    if bad is not None:
        c.issues.add(
            loc, f"invalid parameter placeholder {bad[:40]!r}: write {{{{ params.NAME }}}}", task
        )
        return text
    template = parameters.split_params(text)
    if len(template.parts) == 1:
        return text
    ok = True
    names = sorted(c.spec.params)
    for var in template.variables:
        if var not in c.param_vars:
            c.issues.add(loc, partial(unknown_param, c.suggester, var, names), task)
            ok = False
    if quote:
        for var, where in zip(template.variables, placement_problems(template.parts), strict=True):
            if where is not None:
                c.issues.add(loc, unsafe_placement_message(var, where), task)
                ok = False
    return template.render(c.param_vars, quote=quote) if ok else text
