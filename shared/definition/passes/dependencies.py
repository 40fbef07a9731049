"""Pass 4, dependencies: ``depends_on`` (names and foreach groups) -> each written task's
``deps`` (task numbers) within the limits, then ``dep_policy`` and ``condition`` checked against
the parents they name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from shared.definition.compilation import Compilation, Written
from shared.definition.conditions import compile_condition
from shared.errors import ConditionError
from shared.limits import MAX_DEPENDENCIES, MAX_EDGES


def resolve_dependencies(c: Compilation) -> None:
    """Set each written task's ``deps``; stop resolving past ``MAX_EDGES`` edges."""
    groups = {w.spec.name: w for w in c.written if w.spec.foreach is not None}
    owner, issues = c.owner, c.issues
    edges = 0
    for w in c.written:
        task = w.spec
        if not task.depends_on:
            if task.condition is not None:
                _check_condition(c, w, [])
            continue
        w.deps, dep_error = resolve(c, w, groups)
        edges += len(w.deps) * len(w.expansions)
        if edges > MAX_EDGES:
            # Stop here: resolving costs one step per edge, and the rest cannot help.
            issues.add(
                "tasks",
                f"the workflow has more than {MAX_EDGES:,} dependency edges after"
                " expansion (the limit)",
            )
            return
        if dep_error:  # with a dependency missing, these checks would only add noise
            continue
        policy = task.dep_policy
        if isinstance(policy, int) and policy > len(w.deps):
            issues.add(
                f"{w.loc}.dep_policy",
                f"dep_policy {policy} needs {policy} successful dependencies but the task"
                f" has only {len(w.deps)}",
                task.name,
            )
        if task.condition is not None:
            names = [owner[n].expansions[n - owner[n].first].name for n in w.deps]
            _check_condition(c, w, names)


def resolve(c: Compilation, w: Written, groups: Mapping[str, Written]) -> tuple[list[int], bool]:
    """The task numbers ``w`` depends on, and whether a problem was reported. Stops at
    ``MAX_DEPENDENCIES``, so one task costs at most that many steps."""
    number_of, owner, issues, task = c.number_of, c.owner, c.issues, w.spec
    loc = f"{w.loc}.depends_on"
    deps: list[int] = []
    seen: dict[int, str] = {}
    dep_error = False
    for entry in task.depends_on:
        group = groups.get(entry)
        if entry == task.name:
            issues.add(loc, f"task {task.name!r} depends on itself", task.name)
            dep_error = True
            continue
        if group is not None:
            if group.broken:
                dep_error = True
                continue
            numbers: Sequence[int] = range(group.first, group.first + len(group.expansions))
        elif entry in number_of:
            numbers = (number_of[entry],)
        elif entry in c.unparsed:
            dep_error = True  # that task's own problems are reported already
            continue
        else:
            issues.add(loc, partial(_unknown_dependency, c, entry), task.name)
            dep_error = True
            continue
        if len(deps) + len(numbers) > MAX_DEPENDENCIES:
            issues.add(
                loc,
                f"the task has more than {MAX_DEPENDENCIES:,} dependencies after foreach"
                f" fan-in (the limit), counting {entry!r}",
                task.name,
            )
            return deps, True
        for n in numbers:
            if owner[n] is w:
                issues.add(
                    loc, f"task {task.name!r} depends on its own expansion {entry!r}", task.name
                )
            elif n in seen:
                dep_name = owner[n].expansions[n - owner[n].first].name
                issues.add(loc, _listed_twice(entry, seen[n], dep_name), task.name)
            else:
                seen[n] = entry
                deps.append(n)
                continue
            dep_error = True
            break
    return deps, dep_error


def _unknown_dependency(c: Compilation, entry: str) -> str:
    if c.known_names is None:  # (built once: a definition may name thousands of unknowns)
        c.known_names = [
            *(w.spec.name for w in c.written if w.spec.foreach is not None),
            *c.number_of,
        ]
    return f"unknown dependency {entry!r}{c.suggester.hint(entry, c.known_names)}"


def _check_condition(c: Compilation, w: Written, parents: Sequence[str]) -> None:
    condition = w.spec.condition
    assert condition is not None
    loc = f"{w.loc}.condition"
    if not parents:
        c.issues.add(
            loc,
            "a condition reads the outputs of dependencies, but the task has none: add"
            " depends_on or remove the condition",
            w.spec.name,
        )
        return
    try:
        compile_condition(condition, parents, c.match_budget)
    except ConditionError as exc:
        c.issues.add(loc, str(exc), w.spec.name)


def _listed_twice(entry: str, earlier: str, dep_name: str) -> str:
    if entry == earlier:
        return f"dependency {entry!r} is listed twice"
    return f"{entry!r} and {earlier!r} both include {dep_name!r}: list each dependency once"
