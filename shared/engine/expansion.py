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
  A list that cannot be expanded fails the ``foreach_from`` task with the reason, and so does an
  expansion over the limits a submit enforces (``shared.limits``: tasks, each task's ``cmd`` and
  environment, the dependencies of a task and of the workflow, the bytes of every ``cmd`` and
  environment together), checked before and while the tasks are built, so that memory stays
  bounded by the limits whatever the list.
- **The effective workflow** (``expanded``) is the definition plus the recorded expansions, rebuilt
  deterministically from the state (the definition blob never changes) and cached on the state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from shared.definition.compilation import environment_bytes
from shared.definition.foreach import expansion_name
from shared.definition.templating import (
    PARAMS_PREFIX,
    parse_command,
    parse_template,
    variable_env,
)
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.item_list import ItemList
from shared.engine.state import (
    COMPLETED,
    FAILED,
    IS_OK,
    IS_TERMINAL,
    SKIPPED,
    UPSTREAM_FAILED,
    RuntimeState,
)
from shared.errors import TemplateSyntaxError
from shared.limits import (
    MAX_CMD_BYTES,
    MAX_DEPENDENCIES,
    MAX_EDGES,
    MAX_ENV_BYTES,
    MAX_EXPANDED_BYTES,
    MAX_TASKS,
)
from shared.lru import Lru


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


EXPANDED_CACHED = 4
"""Expanded workflows kept per process for states decoded afresh (every ``GET`` of a workflow):
a read reuses the expansion instead of rebuilding it (each is at most the limits' size)."""

_recent: Lru[tuple[int, str, tuple[tuple[int, int, int], ...]], tuple[CompiledWorkflow, ...]] = Lru(
    EXPANDED_CACHED
)


def expanded(wf: CompiledWorkflow, st: RuntimeState) -> CompiledWorkflow:
    """The workflow as it runs: the definition ``wf`` plus the expansions recorded in ``st``
    (cached on the state, and for a few recent states per process; rebuilt deterministically
    when the definition object differs)."""
    if not st.expansions:
        return wf
    cached = st.effective
    if cached is not None and (cached[0] is wf or cached[1] is wf):
        return cached[1]  # (the caller may hold the expanded workflow already)
    # A list is captured once per attempt of its source: the attempts name the items.
    key = (id(wf), st.workflow_id, tuple((g, n, st.lists[g].attempt) for g, n in st.expansions))
    recent = _recent.get(key)
    if recent is not None and recent[0] is wf:  # (is: an id may be reused once wf is gone)
        st.effective = (wf, recent[1])
        return recent[1]
    current = wf
    for group, count in st.expansions:
        made = _tasks_of(current, group, st.lists[group])
        if isinstance(made, str) or len(made) != count:
            raise ValueError(f"the recorded expansion of task {group} cannot be rebuilt")
        current = _extended(current, group, made)
    st.effective = (wf, current)
    _recent.put(key, (wf, current))
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
        params=wf.params,
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
    shape = _shape_problem(wf, group, len(captured.items))
    if shape is not None:
        return shape
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
    params = {PARAMS_PREFIX + name: value for name, value in wf.params.items()}
    budget = MAX_EXPANDED_BYTES - sum(len(t.cmd) + environment_bytes(t.env) for t in wf.tasks)
    for i, item in enumerate(captured.items):
        own = item_values(item)
        values = {**params, **own} if params else own
        if not wanted <= values.keys():
            missing = sorted(wanted - values.keys())[0]
            return f"cannot expand: item {i} ({_shown(item)}) has no value for {{{{ {missing} }}}}"
        text = cmd.render(values, quote=True)
        if len(text) * 4 > MAX_CMD_BYTES and len(text.encode("utf-8", "replace")) > MAX_CMD_BYTES:
            return f"cannot expand: item {i} makes a cmd longer than {MAX_CMD_BYTES:,} bytes"
        task_env = {key: t.render(values, quote=False) for key, t in env.items()} if env else {}
        try:
            task_env.update(variable_env(own))
        except TemplateSyntaxError as exc:
            return f"cannot expand: item {i}: {exc}"
        env_bytes = environment_bytes(task_env)
        if env_bytes > MAX_ENV_BYTES:
            return (
                f"cannot expand: item {i} makes an environment of {env_bytes:,} characters;"
                f" the limit is {MAX_ENV_BYTES:,}"
            )
        budget -= len(text) + env_bytes
        if budget < 0:
            return (
                f"cannot expand: by item {i} the workflow's commands and environments exceed"
                f" {MAX_EXPANDED_BYTES:,} characters (the limit a submit enforces too)"
            )
        fields = (cwd, parents, policy, timeout, queue_timeout, retries, retry, None, tdef.name)
        made.append(
            TaskDef(
                names[i],
                text,
                queue,
                task_env,
                *fields,
                {"item": item},
                None,
                cache=tdef.cache,
                gpus=tdef.gpus,
            )
        )
    return made


def _shape_problem(wf: CompiledWorkflow, group: int, n: int) -> str | None:
    """Why ``n`` tasks for ``group`` would break the task or dependency limits, before any is
    built (each child of the group gains ``n`` parents in place of the group)."""
    if len(wf.tasks) + n > MAX_TASKS:
        return (
            f"cannot expand: {n:,} tasks would make the workflow {len(wf.tasks) + n:,} tasks;"
            f" the limit is {MAX_TASKS:,}"
        )
    if n == 0:
        return None
    kids = wf.children[group]
    for kid in kids:
        if len(wf.tasks[kid].parents) - 1 + n > MAX_DEPENDENCIES:
            return (
                f"cannot expand: task {wf.tasks[kid].name!r} would depend on"
                f" {len(wf.tasks[kid].parents) - 1 + n:,} tasks; the limit is {MAX_DEPENDENCIES:,}"
            )
    edges = sum(len(t.parents) for t in wf.tasks) - len(kids)
    edges += n * (len(wf.tasks[group].parents) + len(kids))
    if edges > MAX_EDGES:
        return (
            f"cannot expand: the workflow would have {edges:,} dependency edges;"
            f" the limit is {MAX_EDGES:,}"
        )
    return None


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
