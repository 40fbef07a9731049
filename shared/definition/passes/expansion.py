"""Pass 2, expansion: the written tasks -> final tasks (``Written.expansions``, ``number_of``,
``owner``): names and their clashes, ``foreach`` templates and parameters, each final task's
values checked (``shared.definition.passes.values``) and charged to the byte budget
(``shared.definition.passes.budgets``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from shared.definition.compilation import Compilation, Expansion, Written, environment_bytes
from shared.definition.foreach import Params, expand, expansion_count, expansion_name
from shared.definition.parameters import uses_params
from shared.definition.passes.budgets import charge, spent
from shared.definition.passes.params import fill, unknown_param
from shared.definition.passes.values import check_env_names, check_task_values
from shared.definition.suggestions import Suggester
from shared.definition.templating import (
    PARAMS_PREFIX,
    Template,
    parse_command,
    parse_template,
    variable_env,
)
from shared.errors import TemplateSyntaxError
from shared.limits import MAX_EXPANSIONS
from shared.names import TASK_NAME_RE, safe_name_problem


class _Templates(NamedTuple):
    """The parsed templates of one foreach task."""

    cmd: Template
    env: dict[str, Template]
    cwd: Template | None
    queue: Template | None

    def variables(self) -> set[str]:
        """Every variable the templates use."""
        variables = set(self.cmd.variables)
        for t in (*self.env.values(), self.cwd, self.queue):
            if t is not None:
                variables.update(t.variables)
        return variables


def expand_tasks(c: Compilation) -> None:
    """Fill ``written``, ``number_of`` and ``owner`` from the spec's tasks, in order; stop making
    tasks once a budget is spent (the budgets pass then ends the compilation)."""
    issues, number_of, owner = c.issues, c.number_of, c.owner
    first_index: dict[str, int] = {}
    for number, task in enumerate(c.spec.tasks):
        i = c.positions[number] if c.positions is not None else number
        name_ok = TASK_NAME_RE.match(task.name) is not None and ".." not in task.name
        problem = None if name_ok else safe_name_problem(task.name)
        if problem:
            issues.add(f"tasks[{i}].name", problem, task.name or None)
        w = Written(number, task, f"tasks[{i}]" if problem else f"tasks.{task.name}")
        c.written.append(w)
        duplicate = task.name in first_index
        if duplicate:
            issues.add(
                f"{w.loc}.name",
                f"duplicate task name {task.name!r} (also tasks[{first_index[task.name]}])",
                task.name,
            )
        else:
            first_index[task.name] = i
        w.first = len(owner)
        if task.foreach is None:
            w.expansions = [_plain(c, w)]
        else:
            w.expansions = _foreach(c, w)
            w.broken = not w.expansions
        for expansion in w.expansions:
            other = number_of.get(expansion.name)
            if other is None:
                number_of[expansion.name] = len(owner)
            elif not duplicate:  # (a duplicate written name was reported once above)
                _report_clash(c, w, expansion.name, owner[other])
            owner.append(w)
        if spent(c):
            return
    # A foreach task's written name is how others depend on it: it must not name a task.
    for w in c.written:
        clash = number_of.get(w.spec.name) if w.spec.foreach is not None else None
        # (A task written with the same name was reported as a duplicate already.)
        if clash is not None and owner[clash].spec.name != w.spec.name:
            issues.add(
                f"{w.loc}.name",
                f"foreach task name {w.spec.name!r} is also the name of another task",
                w.spec.name,
            )


def _report_clash(c: Compilation, w: Written, name: str, other: Written) -> None:
    theirs = (
        f"an expansion of foreach task {other.spec.name!r}"
        if other.spec.foreach is not None
        else f"task {other.spec.name!r} ({other.loc})"
    )
    if other is w:
        c.issues.add(
            f"{w.loc}.foreach",
            f"two expansions are both named {name!r}: foreach values must be distinct",
            w.spec.name,
        )
    elif w.spec.foreach is not None:
        c.issues.add(
            f"{w.loc}.foreach", f"expansion {name!r} has the same name as {theirs}", w.spec.name
        )
    else:
        c.issues.add(
            f"{w.loc}.name", f"duplicate task name {name!r}: {theirs} has it too", w.spec.name
        )


def _plain(c: Compilation, w: Written) -> Expansion:
    task, spec = w.spec, c.spec
    kwargs = task.kwargs
    if kwargs.env:
        check_env_names(c, kwargs.env, f"{w.loc}.kwargs.env", task.name)
    cmd, own_env, cwd = kwargs.cmd, kwargs.env, kwargs.cwd
    if task.foreach_from is None:
        cmd, own_env, cwd = _fill_params(c, w)
    elif cwd is not None:  # (its cmd and env are filled as it expands: shared.engine.expansion)
        cwd = fill(c, cwd, f"{w.loc}.kwargs.cwd", task.name, quote=False)
    charge(c, len(cmd) + environment_bytes(own_env))
    env = {**c.env, **own_env} if c.env else own_env
    queue = task.queue if task.queue is not None else spec.default_queue
    expansion = Expansion(task.name, cmd, env, cwd, queue, None)
    check_task_values(c, w, expansion, "")
    return expansion


def _fill_params(c: Compilation, w: Written) -> tuple[str, dict[str, str], str | None]:
    """cmd, env and cwd of a task without foreach, with ``{{ params.NAME }}`` filled."""
    kwargs, loc, name = w.spec.kwargs, f"{w.loc}.kwargs", w.spec.name
    cmd = fill(c, kwargs.cmd, f"{loc}.cmd", name, quote=True)
    env = kwargs.env
    if any(uses_params(value) for value in env.values()):
        env = {k: fill(c, v, f"{loc}.env.{k}", name, quote=False) for k, v in env.items()}
    cwd = None if kwargs.cwd is None else fill(c, kwargs.cwd, f"{loc}.cwd", name, quote=False)
    return cmd, env, cwd


def _foreach(c: Compilation, w: Written) -> list[Expansion]:
    task = w.spec
    foreach = task.foreach
    assert foreach is not None
    count = expansion_count(foreach)
    if count == 0:
        c.issues.add(
            f"{w.loc}.foreach",
            "foreach expands to no tasks (an empty list of values): give at least one",
            task.name,
        )
        return []
    if count > MAX_EXPANSIONS:
        c.issues.add(
            f"{w.loc}.foreach",
            f"foreach expands to {count:,} tasks; the limit is {MAX_EXPANSIONS:,} per foreach",
            task.name,
        )
        return []
    templates = _foreach_templates(c, w)
    if templates is None:
        return []
    all_params = list(expand(foreach))
    if not _check_variables(c, w, templates.variables(), all_params):
        return []
    if not _check_variable_env(c, w, all_params):
        return []
    return _render_all(c, w, templates, all_params)


def _foreach_templates(c: Compilation, w: Written) -> _Templates | None:
    """The foreach task's fields parsed as templates; None when one does not parse."""
    task, kwargs = w.spec, w.spec.kwargs
    check_env_names(c, kwargs.env, f"{w.loc}.kwargs.env", task.name)
    loc = f"{w.loc}.kwargs"
    cmd = _template(c, kwargs.cmd, f"{loc}.cmd", w, parse_command)
    env = {k: _template(c, v, f"{loc}.env.{k}", w) for k, v in kwargs.env.items()}
    cwd = _template(c, kwargs.cwd, f"{loc}.cwd", w)
    queue = _template(c, task.queue, f"{w.loc}.queue", w)
    if (
        cmd is None
        or any(t is None for t in env.values())
        or (kwargs.cwd is not None and cwd is None)
        or (task.queue is not None and queue is None)
    ):
        return None
    env_templates = {k: t for k, t in env.items() if t is not None}
    return _Templates(cmd, env_templates, cwd, queue)


def _render_all(
    c: Compilation, w: Written, templates: _Templates, all_params: list[Params]
) -> list[Expansion]:
    """One expansion per parameter set, until the byte budget runs out."""
    task, spec = w.spec, c.spec
    cmd, env_templates, cwd, queue = templates
    out: list[Expansion] = []
    for index, params in enumerate(all_params):
        name = expansion_name(task.name, params, index)
        values = {**c.param_vars, **params} if c.param_vars else params
        rendered = cmd.render(values, quote=True)
        own_env = {k: t.render(values, quote=False) for k, t in env_templates.items()}
        own_env.update(variable_env(params))
        if not charge(c, len(rendered) + environment_bytes(own_env)):
            return out
        expansion = Expansion(
            name,
            rendered,
            {**c.env, **own_env},
            cwd.render(values, quote=False) if cwd is not None else None,
            queue.render(values, quote=False) if queue is not None else spec.default_queue,
            params,
        )
        check_task_values(c, w, expansion, f"in expansion {name!r}: ")
        out.append(expansion)
    return out


def _template(
    c: Compilation,
    text: str | None,
    loc: str,
    w: Written,
    parse: Callable[[str], Template] = parse_template,
) -> Template | None:
    if text is None:
        return None
    try:
        return parse(text)
    except TemplateSyntaxError as exc:
        c.issues.add(loc, str(exc), w.spec.name)
        return None


def _check_variables(
    c: Compilation, w: Written, variables: set[str], all_params: list[Params]
) -> bool:
    task = w.spec
    used = {var for var in variables if var.startswith(PARAMS_PREFIX)}
    variables = variables - used
    ok = _check_params_used(c, w, used)
    if isinstance(task.foreach, dict):
        known = sorted(task.foreach)
        unknown = sorted(variables - set(known))
        for var in unknown:
            message = (
                f"unknown template variable {{{{ {var} }}}}: the workflow parameter is"
                f" {{{{ params.{var} }}}}"
                if var in c.spec.params
                else partial(_unknown_variable, c.suggester, var, known)
            )
            c.issues.add(f"{w.loc}.kwargs", message, task.name)
        return ok and not unknown
    for i, params in enumerate(all_params):
        missing = sorted(variables - params.keys())
        if missing:
            c.issues.add(
                f"{w.loc}.foreach[{i}]",
                f"template variable(s) {', '.join(missing)} used by the task are not set by"
                f" foreach[{i}]",
                task.name,
            )
            ok = False
    return ok


def _check_params_used(c: Compilation, w: Written, used: set[str]) -> bool:
    """Each ``{{ params.NAME }}`` of a foreach task names a declared parameter."""
    names = sorted(c.spec.params)
    unknown = sorted(used - c.param_vars.keys())
    for var in unknown:
        c.issues.add(
            f"{w.loc}.kwargs", partial(unknown_param, c.suggester, var, names), w.spec.name
        )
    return not unknown


def _check_variable_env(c: Compilation, w: Written, all_params: list[Params]) -> bool:
    """Each parameter reaches the task as DAGQ_VAR_<param>: no env entry may set one."""
    names = dict.fromkeys(key for params in all_params for key in params)
    try:
        generated = variable_env(dict.fromkeys(names, ""))
    except TemplateSyntaxError as exc:  # (not with identifier names; kept for safety)
        c.issues.add(f"{w.loc}.foreach", str(exc), w.spec.name)
        return False
    ok = True
    for loc, env in ((f"{w.loc}.kwargs.env", w.spec.kwargs.env), ("env", c.spec.env)):
        for key in env.keys() & generated.keys():
            c.issues.add(
                f"{loc}.{key}",
                f"{key} is set by dagq to the value of foreach parameter"
                f" {key.removeprefix('DAGQ_VAR_')!r}: remove it or rename it",
                w.spec.name,
            )
            ok = False
    return ok


def _unknown_variable(suggester: Suggester, var: str, known: list[str]) -> str:
    return (
        f"unknown template variable {{{{ {var} }}}}{suggester.hint(var, known)}"
        f" (foreach parameters: {', '.join(known)})"
    )
