"""Pass 5, foreach_from: each ``foreach_from`` resolved into the ``ExpandFrom`` its task carries
(``Written.dynamic``): a reference to one plain direct dependency's output, and templates of
``{{ item }}`` / ``{{ item.<key> }}`` (and ``{{ params.NAME }}``) in cmd and env only
(``shared.definition.foreach.dynamic``).
It runs after the dependencies pass: the parent must be one of the task's resolved dependencies."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from shared.definition.compilation import Compilation, Written
from shared.definition.foreach import parse_reference, template_problems
from shared.definition.parameters import without_params
from shared.definition.passes.params import unknown_param
from shared.definition.templating import PARAMS_PREFIX, Template, parse_command, parse_template
from shared.definition.workflow import ExpandFrom
from shared.errors import TemplateSyntaxError


def resolve_foreach_from(c: Compilation) -> None:
    """Set ``dynamic`` on each ``foreach_from`` task whose reference and templates are valid."""
    for w in c.written:
        task = w.spec
        if task.foreach_from is None:
            continue
        loc, add = f"{w.loc}.foreach_from", c.issues.add
        if task.foreach is not None:
            add(loc, "a task has either foreach or foreach_from, not both", task.name)
            continue
        _check_templates(c, w)
        found = parse_reference(task.foreach_from, task.depends_on, _hinter(c, task.depends_on))
        if isinstance(found, str):
            add(loc, found, task.name)
            continue
        parent, path = found
        source = c.number_of.get(parent)
        theirs = next((o for o in c.written if o.spec.name == parent), None)
        if theirs is not None and theirs.spec.foreach is not None:
            add(loc, f"{parent!r} is a foreach of several tasks: name one task", task.name)
            continue
        if theirs is not None and theirs.spec.foreach_from is not None:
            add(loc, f"{parent!r} is a foreach_from task: it has no output", task.name)
            continue
        if source is None:
            continue  # an unknown dependency: reported already
        w.dynamic = ExpandFrom(source, path, c.options.max_expansion_width)


def _hinter(c: Compilation, depends_on: list[str]) -> Callable[[str], str]:
    """The same "did you mean" as depends_on gets: among the dependencies, else every task."""
    candidates = list(depends_on) or (c.known_names or [])

    def hint(name: str) -> str:
        return c.suggester.hint(name, candidates)

    return hint


def _check_templates(c: Compilation, w: Written) -> None:
    kwargs, loc = w.spec.kwargs, f"{w.loc}.kwargs"
    field = "cmd"
    try:
        cmd = parse_command(kwargs.cmd)
        env: dict[str, Template] = {}
        for key, value in kwargs.env.items():
            field = f"env.{key}"
            env[key] = parse_template(value)
    except TemplateSyntaxError as exc:
        c.issues.add(f"{loc}.{field}", str(exc), w.spec.name)
        return
    for field, problem in template_problems(cmd, env):
        c.issues.add(f"{loc}.{field}", problem, w.spec.name)
    names = sorted(c.spec.params)
    for field, template in (("cmd", cmd), *((f"env.{k}", t) for k, t in env.items())):
        for var in template.variables:
            if var.startswith(PARAMS_PREFIX) and var not in c.param_vars:
                c.issues.add(
                    f"{loc}.{field}", partial(unknown_param, c.suggester, var, names), w.spec.name
                )
    for field, text in (("kwargs.cwd", kwargs.cwd), ("queue", w.spec.queue)):
        if text is not None and "{{" in without_params(text):
            c.issues.add(
                f"{w.loc}.{field}",
                "a foreach_from task cannot template its cwd or queue (only cmd and env)",
                w.spec.name,
            )
