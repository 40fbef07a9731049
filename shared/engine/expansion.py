"""Dynamic fan-out (``foreach_from``): a task that stands for one task per item of a parent's list.

- **Capture** (``shared.engine.capture``): when the source parent completes, the list at
  ``inputs.<parent>.<path>`` in its output is validated and kept in the state
  (``RuntimeState.lists``), or why it cannot be expanded.
- **Expansion**: when the ``foreach_from`` task's own dependency policy and condition are met, it
  expands once: its tasks are appended to the workflow (numbered after the definition's, recorded in
  ``RuntimeState.expansions``), each a copy of it with ``{{ item }}`` / ``{{ item.<key> }}`` filled
  in (``shared.definition.templating``, the same shell-safe route as static foreach, plus
  ``DAGQ_VAR_item*``).
  The ``foreach_from`` task itself becomes completed without running; its children depend on the
  expansions instead (on it alone when the list was empty, so an empty list satisfies them).
  A list that cannot be expanded fails the ``foreach_from`` task with the reason.
- **The effective workflow** (``expanded``) is the definition plus the recorded expansions, rebuilt
  deterministically from the state (the definition blob never changes) and cached on the state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from shared.definition.foreach import expansion_name
from shared.definition.templating import parse_command, parse_template, variable_env
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.state import (
    COMPLETED,
    FAILED,
    IS_OK,
    IS_TERMINAL,
    SKIPPED,
    UPSTREAM_FAILED,
    ItemList,
    RuntimeState,
)
from shared.errors import TemplateSyntaxError
from shared.limits import MAX_CMD_BYTES, MAX_TASKS


class Step(Protocol):
    """What an expansion needs of the transition in progress (``shared.engine.step.Step``, which
    calls it: defined here so that the two modules do not import each other)."""

    wf: CompiledWorkflow
    st: RuntimeState
    now_ms: int
    changed: bool

    def evaluate(self, task: int, work: list[int], cause: int | None = None) -> None:
        """Decide ``task`` now that a parent settled (dispatch, skip or wait)."""


def expand(step: Step, group: int, work: list[int]) -> None:
    """The ``foreach_from`` task ``group`` is due (its policy and condition are met): expand it,
    or settle it with the reason it cannot. Terminal tasks go to ``work`` for propagation."""
    st, wf = step.st, step.wf
    spec = wf.tasks[group].expand
    assert spec is not None
    captured = st.lists.get(group)
    if captured is None:
        source = wf.tasks[spec.source].name
        state = st.state_of(spec.source)
        if st.codes[spec.source] == SKIPPED:
            _settle(step, group, SKIPPED, f"nothing to expand: {source} was skipped", work)
        else:
            why = f"nothing to expand: {source} is {state}, it produced no list"
            _settle(step, group, UPSTREAM_FAILED, why, work)
        return
    made = _tasks_of(wf, group, captured)
    if isinstance(made, str):
        _settle(step, group, FAILED, made, work)
        return
    if len(wf.tasks) + len(made) > MAX_TASKS:
        why = (
            f"cannot expand: {len(made):,} tasks would make the workflow"
            f" {len(wf.tasks) + len(made):,} tasks; the limit is {MAX_TASKS:,}"
        )
        _settle(step, group, FAILED, why, work)
        return
    first = len(wf.tasks)
    base = st.effective[0] if st.effective is not None else wf
    step.wf = _extended(wf, group, made)
    st.effective = (base, step.wf)
    st.grow(len(made))
    st.expansions.append((group, len(made)))
    st.names = st.names + tuple(t.name for t in made)
    codes, parents = st.codes, wf.tasks[group].parents
    ok = sum(IS_OK[codes[p]] for p in parents)
    bad = sum(IS_TERMINAL[codes[p]] and not IS_OK[codes[p]] for p in parents)
    for task in range(first, first + len(made)):
        st.n_ok[task], st.n_bad[task] = ok, bad
    _settle(step, group, COMPLETED, None, work)
    for task in range(first, first + len(made)):
        step.evaluate(task, work)


def awaits_expansion(wf: CompiledWorkflow, st: RuntimeState, name: str) -> bool:
    """Whether ``name`` can be a task of a ``foreach_from`` task that may still expand (pending:
    ``<group>.<anything>``, the form of every expansion name)."""
    pending = st.codes
    return any(
        t.expand is not None and not pending[i] and name.startswith(t.name + ".")
        for i, t in enumerate(wf.tasks)
    )


def _settle(step: Step, task: int, code: int, why: str | None, work: list[int]) -> None:
    step.changed = True
    step.st.settle(task, code, why, step.now_ms)
    work.append(task)


def expanded(wf: CompiledWorkflow, st: RuntimeState) -> CompiledWorkflow:
    """The workflow as it runs: the definition ``wf`` plus the expansions recorded in ``st``
    (cached on the state; rebuilt deterministically when the definition object differs)."""
    if not st.expansions:
        return wf
    cached = st.effective
    if cached is not None and (cached[0] is wf or cached[1] is wf):
        return cached[1]  # (the caller may hold the expanded workflow already)
    current = wf
    for group, count in st.expansions:
        made = _tasks_of(current, group, st.lists[group])
        if isinstance(made, str) or len(made) != count:
            raise ValueError(f"the recorded expansion of task {group} cannot be rebuilt")
        current = _extended(current, group, made)
    st.effective = (wf, current)
    return current


def _extended(wf: CompiledWorkflow, group: int, made: list[TaskDef]) -> CompiledWorkflow:
    """``wf`` with ``made`` appended; children of ``group`` depend on them instead (unless there
    are none: then on ``group`` itself, completed)."""
    if not made:
        return wf
    # Built incrementally (what CompiledWorkflow.of would derive, without a pass over the rest).
    tasks, children, index = list(wf.tasks), list(wf.children), dict(wf.index)
    first = len(tasks)
    new = tuple(range(first, first + len(made)))
    kids = wf.children[group]
    for child in kids:
        t = tasks[child]
        tasks[child] = replace(t, parents=tuple(p for p in t.parents if p != group) + new)
    for parent in made[0].parents:  # every expanded task has the group's parents
        children[parent] += new
    children[group] = ()
    children.extend([kids] * len(made))
    tasks.extend(made)
    index.update(zip((t.name for t in made), new, strict=True))
    return CompiledWorkflow(
        name=wf.name,
        tasks=tuple(tasks),
        max_parallelism=wf.max_parallelism,
        result_policy=wf.result_policy,
        index=index,
        children=tuple(children),
        source=wf.source,
    )


def item_values(item: Any) -> dict[str, Any]:
    """The template variables of one item: ``item``, and ``item.<key>`` for an object's keys."""
    values: dict[str, Any] = {"item": item}
    if isinstance(item, dict):
        values.update((f"item.{key}", value) for key, value in item.items())
    return values


def _tasks_of(wf: CompiledWorkflow, group: int, captured: ItemList) -> list[TaskDef] | str:
    """The tasks of ``group``'s expansion over ``captured``, or why it cannot expand."""
    if captured.error is not None:
        return captured.error
    tdef = wf.tasks[group]
    try:
        cmd = parse_command(tdef.cmd)
        env = {key: parse_template(value) for key, value in tdef.env.items()}
    except TemplateSyntaxError as exc:  # validated at submit; a definition from an older dagq
        return f"cannot expand: {exc}"
    names = _names(wf, tdef.name, captured.items)
    clash = _clash(wf, names)
    if clash:
        return clash
    wanted = {*cmd.variables, *_variables(env)}
    # TaskDef's fields in order, built positionally (10,000 items: dataclasses.replace would cost
    # more than the rest of the expansion). The condition was evaluated once, on the
    # foreach_from task; the expanded tasks are plain tasks (no expand).
    queue, cwd, parents, policy = tdef.queue, tdef.cwd, tdef.parents, tdef.dep_policy
    timeout, queue_timeout, retries, retry = (
        tdef.timeout_s,
        tdef.queue_timeout_s,
        tdef.num_retries,
        tdef.retry,
    )
    made: list[TaskDef] = []
    for i, item in enumerate(captured.items):
        values = item_values(item)
        if not wanted <= values.keys():
            missing = sorted(wanted - values.keys())[0]
            return f"cannot expand: item {i} ({_shown(item)}) has no value for {{{{ {missing} }}}}"
        text = cmd.render(values, quote=True)
        if len(text) * 4 > MAX_CMD_BYTES and len(text.encode("utf-8", "replace")) > MAX_CMD_BYTES:
            return f"cannot expand: item {i} makes a cmd longer than {MAX_CMD_BYTES:,} bytes"
        task_env = {key: t.render(values, quote=False) for key, t in env.items()} if env else {}
        try:
            task_env.update(variable_env(values))
        except TemplateSyntaxError as exc:
            return f"cannot expand: item {i}: {exc}"
        fields = (cwd, parents, policy, timeout, queue_timeout, retries, retry, None, tdef.name)
        made.append(TaskDef(names[i], text, queue, task_env, *fields, {"item": item}, None))
    return made


def _variables(env: dict[str, Any]) -> list[str]:
    return [v for t in env.values() for v in t.variables]


def _names(wf: CompiledWorkflow, group: str, items: tuple[Any, ...]) -> list[str]:
    """Names as static foreach gives them (``process.item=s0``, ``process.shard=s0.size=2`` for an
    object); ``process.<i>`` for every item when those would collide."""
    names = [
        expansion_name(group, item if isinstance(item, dict) and item else {"item": item}, i)
        for i, item in enumerate(items)
    ]
    if len(set(names)) != len(names) or any(n in wf.index for n in names):
        return [f"{group}.{i}" for i in range(len(items))]
    return names  # (expansion_name gives valid task names only)


def _clash(wf: CompiledWorkflow, names: list[str]) -> str | None:
    taken = next((n for n in names if n in wf.index), None)
    if taken is None and len(set(names)) == len(names):
        return None
    return f"cannot expand: task name {taken!r} is taken (rename the task)"


def _shown(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 40 else text[:37] + "..."
