"""Pass 7, cache: checks of ``cache`` (result caching): the version's text and the ``ttl``
duration, each issue located at ``tasks.<name>.cache.<field>``; the result is each task's
``CachePolicy`` (the build pass asks for it). Also a submit's overrides (``--no-cache``,
``--refresh TASK``: ``with_cache_overrides``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from shared.definition.compilation import Compilation, Written
from shared.definition.passes.values import CONTROL_RE
from shared.definition.spec import CacheSpec
from shared.definition.workflow import DEFAULT_CACHE_TTL_S, CachePolicy, CompiledWorkflow, TaskDef
from shared.durations import EXAMPLES, parse_duration, spell_duration
from shared.errors import DefinitionError, Issue
from shared.limits import MAX_CACHE_TTL_S


def check_cache(c: Compilation) -> None:
    """Pass 7: every task's ``cache`` (its issues reported with the others)."""
    for w in c.written:
        cache_policy(c, w)


def cache_policy(c: Compilation, w: Written) -> CachePolicy | None:
    """The task's policy (None: not cached); problems go to ``c.issues``."""
    cache = w.spec.cache
    if cache is False:
        return None
    if cache is True:
        return CachePolicy()
    assert isinstance(cache, CacheSpec)
    loc, name = f"{w.loc}.cache", w.spec.name
    if CONTROL_RE.search(cache.version):
        c.issues.add(f"{loc}.version", "the version must not contain control characters", name)
    ttl = _ttl_seconds(cache.ttl)
    if isinstance(ttl, str):
        c.issues.add(f"{loc}.ttl", ttl, name)
        return None
    return CachePolicy(version=cache.version, ttl_s=ttl)


def _ttl_seconds(ttl: str | int | float | None) -> float | str:
    """The ttl in seconds, or what is wrong with it."""
    if ttl is None:
        return DEFAULT_CACHE_TTL_S
    if isinstance(ttl, bool):
        return f"ttl must be a duration such as {EXAMPLES}, got a boolean"
    try:
        seconds = float(ttl) if isinstance(ttl, int | float) else parse_duration(ttl)
    except ValueError as exc:
        return str(exc)
    if not 0 < seconds <= MAX_CACHE_TTL_S:
        return f"ttl must be more than 0 and at most {spell_duration(MAX_CACHE_TTL_S)}, got {ttl!r}"
    return seconds


def with_cache_overrides(
    wf: CompiledWorkflow,
    *,
    no_cache: bool = False,
    refresh: Collection[str] = (),
    source: str = "<input>",
) -> CompiledWorkflow:
    """``wf`` as a submit asked for it: ``no_cache`` turns caching off for this run (no look-up,
    no entry written); each name in ``refresh`` (a task, or a foreach task as written) is
    recomputed and its entry replaced. Raises DefinitionError naming a task that does not exist
    or has no ``cache``."""
    if not no_cache and not refresh:
        return wf
    wanted = set(refresh)
    issues = [
        Issue("refresh", f"no task {name!r} in the workflow", None)
        for name in sorted(wanted - set(wf.index) - {t.group for t in wf.tasks if t.group})
    ]
    for name in sorted(wanted):
        if any((t.name == name or t.group == name) and t.cache is None for t in wf.tasks):
            issues.append(Issue("refresh", f"task {name!r} has no cache: nothing to refresh", name))
    if issues:
        raise DefinitionError(issues, source)
    tasks = [_overridden(t, no_cache, wanted) for t in wf.tasks]
    return dataclasses.replace(wf, tasks=tuple(tasks))


def _overridden(task: TaskDef, no_cache: bool, refresh: set[str]) -> TaskDef:
    if task.cache is None:
        return task
    if no_cache:
        return dataclasses.replace(task, cache=None)
    if task.name in refresh or task.group in refresh:
        return dataclasses.replace(task, cache=dataclasses.replace(task.cache, refresh=True))
    return task
