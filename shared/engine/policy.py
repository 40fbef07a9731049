"""Dependency policies and task conditions: is a pending task ready, skipped or upstream_failed?

Both are decided from O(1) counters (how many parents are terminal and succeeded / failed), never by
looking at every parent, so a parent's completion costs O(1) per child whatever the child's fan-in.
Conditions are compiled once per ``CompiledWorkflow`` and evaluated once, when the policy is met.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from shared.definition.conditions import ParentView, compile_condition
from shared.definition.workflow import CompiledWorkflow, DepPolicy
from shared.engine.state import FAILED, READY, SKIPPED, UPSTREAM_FAILED, RuntimeState
from shared.errors import ConditionBudgetError, ConditionError, DagqError


def decide(policy: DepPolicy, n_parents: int, n_ok: int, n_bad: int) -> int | None:
    """READY, UPSTREAM_FAILED, or None (keep waiting) for a pending task with ``n_parents`` parents
    of which ``n_ok`` are terminal and satisfying and ``n_bad`` terminal and failed."""
    if policy == "all":
        if n_bad:
            return UPSTREAM_FAILED
        return READY if n_ok == n_parents else None
    if policy == "any":
        if n_ok:
            return READY
        return UPSTREAM_FAILED if n_bad == n_parents else None
    if policy == "all_settled":
        if n_ok + n_bad < n_parents:
            return None
        return READY if n_ok or not n_parents else UPSTREAM_FAILED
    # An integer N: at least N parents must succeed.
    need = int(policy)
    if n_ok >= need:
        return READY
    return UPSTREAM_FAILED if n_parents - n_bad < need else None


# -- conditions ----------------------------------------------------------------------------------

if TYPE_CHECKING:
    from shared.definition.conditions import Condition

_compiled: dict[int, tuple[weakref.ref[CompiledWorkflow], dict[int, Condition | ConditionError]]]
_compiled = {}


def _cache_for(wf: CompiledWorkflow) -> dict[int, Condition | ConditionError]:
    """The compiled conditions of ``wf`` (keyed by id: CompiledWorkflow is not hashable)."""
    key = id(wf)
    entry = _compiled.get(key)
    if entry is not None and entry[0]() is wf:
        return entry[1]
    cache: dict[int, Condition | ConditionError] = {}
    _compiled[key] = (weakref.ref(wf), cache)
    weakref.finalize(wf, _compiled.pop, key, None)
    return cache


def _compile(wf: CompiledWorkflow, task: int) -> Condition | ConditionError:
    # Imported lazily: only workflows that use conditions pay for the expression language.

    cache = _cache_for(wf)
    found = cache.get(task)
    if found is None:
        tdef = wf.tasks[task]
        assert tdef.condition is not None
        try:
            found = compile_condition(tdef.condition, [wf.tasks[p].name for p in tdef.parents])
        except ConditionError as exc:
            found = exc
        cache[task] = found
    return found


def condition_verdict(
    wf: CompiledWorkflow, state: RuntimeState, task: int
) -> tuple[int, str] | None:
    """None if task ``task`` has no condition or its condition holds; otherwise (SKIPPED, why)
    (the condition was false, or could not be compiled or evaluated) or (FAILED, why) when it
    needs more than its evaluation budget. Blob outputs are not read: a condition sees inline
    outputs only."""
    expr = wf.tasks[task].condition
    if expr is None:
        return None
    condition = _compile(wf, task)
    if isinstance(condition, ConditionError):
        return _condition_error(condition)

    inputs: dict[str, ParentView] = {}
    for p in wf.tasks[task].parents:
        ref = state.outputs.get(p)
        inputs[wf.tasks[p].name] = ParentView(
            state.state_of(p).value, None if ref is None else ref.inline
        )
    try:
        holds = condition.evaluate(inputs)
    except DagqError as exc:  # ConditionError, or any other deliberate error of the evaluator
        return _condition_error(exc)
    return None if holds else (SKIPPED, f"condition is false: {expr}")


def _condition_error(exc: DagqError) -> tuple[int, str]:
    # Over budget is not an answer about the data: the task fails rather than letting its
    # children run as if it were skipped.
    if isinstance(exc, ConditionBudgetError):
        return FAILED, f"condition over budget: {exc}"
    return SKIPPED, f"condition error: {exc}"
