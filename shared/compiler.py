"""Definition text -> validated, expanded ``CompiledWorkflow``, reporting every problem at once.

Two steps, each raising ``shared.errors.DefinitionError`` with all the issues it found:

1. ``parse_definition`` (``shared.parsing``): text -> ``WorkflowSpec`` (UTF-8, YAML/JSON syntax,
   keys, types).
2. ``compile_workflow``: ``WorkflowSpec`` -> ``CompiledWorkflow`` (names, foreach expansion and
   templates, queues, env, dependencies, dep_policy, conditions, cycles, limits).

Every check is linear in the size of the definition: the API runs this on each submit.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from shared.conditions import MAX_GLOB_MATCHES, MatchBudget, compile_condition
from shared.errors import ConditionError, DefinitionError, Issue, TemplateSyntaxError
from shared.foreach import Params, expand, expansion_count, expansion_name
from shared.foreach_from import parse_reference, template_problems
from shared.gc_pause import paused_gc
from shared.names import TASK_NAME_RE, queue_name_problem, safe_name_problem
from shared.parsing import MAX_DEFINITION_BYTES, Format, parse_definition, parse_for_validation
from shared.spec import RetrySpec, TaskSpec, WorkflowSpec
from shared.suggestions import Suggester
from shared.templating import (
    Template,
    parse_command,
    parse_template,
    variable_env,
)
from shared.workflow import (
    MAX_CMD_BYTES,
    MAX_TASKS,
    CompiledWorkflow,
    ExpandFrom,
    RetryPolicy,
    TaskDef,
)

__all__ = [
    "MAX_CMD_BYTES",
    "MAX_CWD_CHARS",
    "MAX_DEFINITION_BYTES",
    "MAX_DEPENDENCIES",
    "MAX_EDGES",
    "MAX_ENV_BYTES",
    "MAX_EXPANDED_BYTES",
    "MAX_EXPANSIONS",
    "MAX_TASKS",
    "MAX_WORKFLOW_NAME",
    "compile_workflow",
    "load_workflow",
    "parse_definition",
]

# -- limits (documented in docs/workflow-format.md) -------------------------------------------
MAX_EXPANSIONS = 10_000
"""Most tasks one foreach may expand to."""
MAX_DEPENDENCIES = 10_000
"""Most dependencies of one task, after foreach fan-in is expanded."""
MAX_EDGES = 2_000_000
"""Most dependency edges in a workflow, after expansion."""
MAX_ENV_BYTES = 16 * 1024
"""Largest environment of one task (workflow env merged with the task's), as NAME=value bytes."""
MAX_EXPANDED_BYTES = 64 * 1024 * 1024
"""Most bytes of ``cmd`` and environment (workflow env included) of all tasks after expansion:
what bounds the work and memory of a small definition that expands to much."""
MAX_CWD_CHARS = 1024
"""Longest ``cwd``."""
MAX_WORKFLOW_NAME = 200
"""Longest workflow name."""
MAX_REPEATS_PER_LOCATION = 3
"""Issues shown per location before the rest are summarised (one bad value x 10,000 expansions)."""

_ENV_NAME_RE = re.compile(r"^[^=\x00]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_DEFAULT_RETRY = RetryPolicy()


def compile_workflow(
    spec: WorkflowSpec,
    *,
    source_text: str | None = None,
    max_expansion_width: int = MAX_EXPANSIONS,
) -> CompiledWorkflow:
    """Expand foreach, merge env, resolve defaults and validate the graph.

    Raises DefinitionError with every issue found.
    """
    with paused_gc():
        return _Compiler(spec, max_expansion_width=max_expansion_width).run(source_text, "<input>")


def load_workflow(
    data: str | bytes,
    *,
    source: str = "<input>",
    fmt: Format | None = None,
    max_expansion_width: int = MAX_EXPANSIONS,
) -> CompiledWorkflow:
    """Parse and compile in one step (what the API and ``dagq validate`` do)."""
    with paused_gc():
        spec, shape_error, partial = parse_for_validation(data, source=source, fmt=fmt)
        if shape_error is not None:
            # Check what parsed too, so one run reports every problem (shape and graph).
            if partial is not None:
                compiler = _Compiler(partial.spec, partial.positions, partial.unparsed)
                try:
                    compiler.run(None, source)
                except DefinitionError as graph_error:
                    shape_error.issues += graph_error.issues
                    raise DefinitionError(shape_error.issues, source) from None
            raise shape_error
        assert spec is not None
        text = data if isinstance(data, str) else data.decode("utf-8-sig")
        return _Compiler(spec, max_expansion_width=max_expansion_width).run(text, source)


class _Issues:
    """Collects issues, summarising a location repeated by many expansions."""

    def __init__(self) -> None:
        self.items: list[Issue] = []
        self._per_location: dict[str, int] = defaultdict(int)
        self._first_task: dict[str, str | None] = {}

    def add(self, location: str, message: str | Callable[[], str], task: str | None = None) -> None:
        """Record an issue; a callable message is only built if the issue is shown (hints)."""
        self._per_location[location] += 1
        if self._per_location[location] <= MAX_REPEATS_PER_LOCATION:
            text = message if isinstance(message, str) else message()
            self.items.append(Issue(location, text, task))
            self._first_task.setdefault(location, task)

    def finish(self) -> list[Issue]:
        for location, count in self._per_location.items():
            extra = count - MAX_REPEATS_PER_LOCATION
            if extra > 0:
                task = self._first_task[location]
                self.items.append(Issue(location, f"... and {extra} more like the above", task))
        return self.items

    def __bool__(self) -> bool:
        return bool(self.items)


class _Expansion:
    """The values of one final task before its parents are known."""

    __slots__ = ("cmd", "cwd", "env", "name", "params", "queue")

    def __init__(
        self,
        name: str,
        cmd: str,
        env: dict[str, str],
        cwd: str | None,
        queue: str,
        params: Params | None,
    ) -> None:
        self.name = name
        self.cmd = cmd
        self.env = env
        self.cwd = cwd
        self.queue = queue
        self.params = params


class _Written:
    """One task as written, with what the compiler derived from it."""

    __slots__ = ("broken", "deps", "dynamic", "expansions", "first", "index", "loc", "spec")

    def __init__(self, index: int, spec: TaskSpec, loc: str) -> None:
        self.index = index
        self.spec = spec
        self.loc = loc
        """``tasks.<name>`` (or ``tasks[i]`` when the name itself is invalid)."""
        self.expansions: list[_Expansion] = []
        """One per final task (exactly one unless foreach)."""
        self.first = 0
        """Task number of the first of them."""
        self.deps: list[int] = []
        """Resolved parent task numbers (the same for every expansion)."""
        self.broken = False
        """Its foreach could not be expanded (already reported): dependents skip their checks."""
        self.dynamic: ExpandFrom | None = None
        """Its ``foreach_from``, resolved (after the dependencies)."""


class _Compiler:
    """One compilation: the spec, the issues found so far, and the name tables."""

    def __init__(
        self,
        spec: WorkflowSpec,
        positions: Sequence[int] | None = None,
        unparsed: frozenset[str] = frozenset(),
        *,
        max_expansion_width: int = MAX_EXPANSIONS,
    ) -> None:
        self.spec = spec
        self.max_expansion_width = max_expansion_width
        """Most tasks one foreach_from may expand to at run time (``Settings``)."""
        self.positions = positions
        """Where each task was written, when tasks with shape problems were left out."""
        self.unparsed = unparsed
        """Names of the tasks left out (their problems are reported already)."""
        self.issues = _Issues()
        self.suggester = Suggester()
        self.match_budget = MatchBudget(MAX_GLOB_MATCHES)
        self._names: list[str] | None = None
        self.written: list[_Written] = []
        self.number_of: dict[str, int] = {}
        """Final task name -> task number (the first, if duplicated)."""
        self.owner: list[_Written] = []
        """Task number -> the written task it came from."""
        self.expanded_left = MAX_EXPANDED_BYTES
        """Bytes of cmd + env the expansions may still add (see ``charge``)."""
        self.workflow_env_bytes = _env_bytes(spec.env)

    def run(self, source_text: str | None, source: str) -> CompiledWorkflow:
        spec, issues = self.spec, self.issues
        self.check_workflow_fields()
        self.expand_all()
        if len(self.owner) > MAX_TASKS:
            issues.add(
                "tasks",
                f"the workflow has more than {MAX_TASKS:,} tasks after foreach expansion",
            )
            raise DefinitionError(issues.finish(), source)
        if self.expanded_left < 0:
            raise DefinitionError(issues.finish(), source)
        self.resolve_dependencies()
        self.check_dynamic()
        self.check_acyclic()
        if issues:
            raise DefinitionError(issues.finish(), source)
        return CompiledWorkflow.of(
            spec.name,
            [task for w in self.written for task in self.task_defs(w)],
            max_parallelism=spec.max_parallelism,
            result_policy=spec.result_policy,
            source=source_text,
        )

    # -- workflow-level fields -------------------------------------------------------------
    def check_workflow_fields(self) -> None:
        spec, issues = self.spec, self.issues
        if not spec.name.strip():
            issues.add("name", "the workflow name must not be empty")
        elif len(spec.name) > MAX_WORKFLOW_NAME:
            issues.add("name", f"the workflow name is longer than {MAX_WORKFLOW_NAME} characters")
        elif _CONTROL_RE.search(spec.name):
            issues.add("name", "the workflow name must not contain control characters")
        problem = queue_name_problem(spec.default_queue)
        if problem:
            issues.add("default_queue", problem)
        self.check_env_names(spec.env, "env", None)
        if not spec.tasks:
            issues.add("tasks", "the workflow has no tasks: add at least one")

    def check_env_names(self, env: Mapping[str, str], loc: str, task: str | None) -> None:
        for key, value in env.items():
            if not _ENV_NAME_RE.match(key):
                self.issues.add(
                    f"{loc}.{key}",
                    f"invalid environment variable name {key!r} (no '=' or NUL)",
                    task,
                )
            if "\x00" in value:
                self.issues.add(
                    f"{loc}.{key}", "environment values must not contain NUL characters", task
                )

    # -- expansion -------------------------------------------------------------------------
    def expand_all(self) -> None:
        issues, number_of, owner = self.issues, self.number_of, self.owner
        first_index: dict[str, int] = {}
        for number, task in enumerate(self.spec.tasks):
            i = self.positions[number] if self.positions is not None else number
            name_ok = TASK_NAME_RE.match(task.name) is not None and ".." not in task.name
            problem = None if name_ok else safe_name_problem(task.name)
            if problem:
                issues.add(f"tasks[{i}].name", problem, task.name or None)
            w = _Written(number, task, f"tasks[{i}]" if problem else f"tasks.{task.name}")
            self.written.append(w)
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
                w.expansions = [self.plain(w)]
            else:
                w.expansions = self.foreach(w)
                w.broken = not w.expansions
            for expansion in w.expansions:
                other = number_of.get(expansion.name)
                if other is None:
                    number_of[expansion.name] = len(owner)
                elif not duplicate:  # (a duplicate written name was reported once above)
                    self.report_clash(w, expansion.name, owner[other])
                owner.append(w)
            if len(owner) > MAX_TASKS or self.expanded_left < 0:
                return
        # A foreach task's written name is how others depend on it: it must not name a task.
        for w in self.written:
            clash = number_of.get(w.spec.name) if w.spec.foreach is not None else None
            # (A task written with the same name was reported as a duplicate already.)
            if clash is not None and owner[clash].spec.name != w.spec.name:
                issues.add(
                    f"{w.loc}.name",
                    f"foreach task name {w.spec.name!r} is also the name of another task",
                    w.spec.name,
                )

    def report_clash(self, w: _Written, name: str, other: _Written) -> None:
        theirs = (
            f"an expansion of foreach task {other.spec.name!r}"
            if other.spec.foreach is not None
            else f"task {other.spec.name!r} ({other.loc})"
        )
        if other is w:
            self.issues.add(
                f"{w.loc}.foreach",
                f"two expansions are both named {name!r}: foreach values must be distinct",
                w.spec.name,
            )
        elif w.spec.foreach is not None:
            self.issues.add(
                f"{w.loc}.foreach",
                f"expansion {name!r} has the same name as {theirs}",
                w.spec.name,
            )
        else:
            self.issues.add(
                f"{w.loc}.name", f"duplicate task name {name!r}: {theirs} has it too", w.spec.name
            )

    def plain(self, w: _Written) -> _Expansion:
        task, spec = w.spec, self.spec
        kwargs = task.kwargs
        if kwargs.env:
            self.check_env_names(kwargs.env, f"{w.loc}.kwargs.env", task.name)
        self.charge(len(kwargs.cmd) + _env_bytes(kwargs.env))
        env = {**spec.env, **kwargs.env} if spec.env else kwargs.env
        queue = task.queue if task.queue is not None else spec.default_queue
        expansion = _Expansion(task.name, kwargs.cmd, env, kwargs.cwd, queue, None)
        self.check_values(w, expansion, "")
        return expansion

    def foreach(self, w: _Written) -> list[_Expansion]:
        task, spec = w.spec, self.spec
        foreach = task.foreach
        assert foreach is not None
        count = expansion_count(foreach)
        if count == 0:
            self.issues.add(
                f"{w.loc}.foreach",
                "foreach expands to no tasks (an empty list of values): give at least one",
                task.name,
            )
            return []
        if count > MAX_EXPANSIONS:
            self.issues.add(
                f"{w.loc}.foreach",
                f"foreach expands to {count:,} tasks; the limit is {MAX_EXPANSIONS:,} per foreach",
                task.name,
            )
            return []
        kwargs = task.kwargs
        self.check_env_names(kwargs.env, f"{w.loc}.kwargs.env", task.name)
        loc = f"{w.loc}.kwargs"
        cmd = self.template(kwargs.cmd, f"{loc}.cmd", w, parse_command)
        env = {k: self.template(v, f"{loc}.env.{k}", w) for k, v in kwargs.env.items()}
        cwd = self.template(kwargs.cwd, f"{loc}.cwd", w)
        queue = self.template(task.queue, f"{w.loc}.queue", w)
        if (
            cmd is None
            or any(t is None for t in env.values())
            or (kwargs.cwd is not None and cwd is None)
            or (task.queue is not None and queue is None)
        ):
            return []
        env_templates = {k: t for k, t in env.items() if t is not None}
        variables = set(cmd.variables)
        for t in (*env_templates.values(), cwd, queue):
            if t is not None:
                variables.update(t.variables)
        all_params = list(expand(foreach))
        if not self.check_variables(w, variables, all_params):
            return []
        if not self.check_variable_env(w, all_params):
            return []
        out: list[_Expansion] = []
        for index, params in enumerate(all_params):
            name = expansion_name(task.name, params, index)
            rendered = cmd.render(params, quote=True)
            own_env = {k: t.render(params, quote=False) for k, t in env_templates.items()}
            own_env.update(variable_env(params))
            if not self.charge(len(rendered) + _env_bytes(own_env)):
                return out
            expansion = _Expansion(
                name,
                rendered,
                {**spec.env, **own_env},
                cwd.render(params, quote=False) if cwd is not None else None,
                queue.render(params, quote=False) if queue is not None else spec.default_queue,
                params,
            )
            self.check_values(w, expansion, f"in expansion {name!r}: ")
            out.append(expansion)
        return out

    def charge(self, own_bytes: int) -> bool:
        """Count one more task's cmd and env (with the workflow's); False, reported once, when
        they add up to more than MAX_EXPANDED_BYTES (``run`` then stops)."""
        left = self.expanded_left
        self.expanded_left -= own_bytes + self.workflow_env_bytes
        if self.expanded_left < 0 <= left:
            self.issues.add(
                "tasks",
                f"the tasks' commands and environments (workflow env included) add up to more"
                f" than {MAX_EXPANDED_BYTES:,} bytes after foreach expansion (the limit): put"
                " long scripts and large values in files, and keep the workflow env small",
            )
        return self.expanded_left >= 0

    def template(
        self,
        text: str | None,
        loc: str,
        w: _Written,
        parse: Callable[[str], Template] = parse_template,
    ) -> Template | None:
        if text is None:
            return None
        try:
            return parse(text)
        except TemplateSyntaxError as exc:
            self.issues.add(loc, str(exc), w.spec.name)
            return None

    def check_variables(self, w: _Written, variables: set[str], all_params: list[Params]) -> bool:
        task = w.spec
        if isinstance(task.foreach, dict):
            known = sorted(task.foreach)
            unknown = sorted(variables - set(known))
            for var in unknown:
                self.issues.add(
                    f"{w.loc}.kwargs",
                    partial(_unknown_variable, self.suggester, var, known),
                    task.name,
                )
            return not unknown
        ok = True
        for i, params in enumerate(all_params):
            missing = sorted(variables - params.keys())
            if missing:
                self.issues.add(
                    f"{w.loc}.foreach[{i}]",
                    f"template variable(s) {', '.join(missing)} used by the task are not set by"
                    f" foreach[{i}]",
                    task.name,
                )
                ok = False
        return ok

    def check_variable_env(self, w: _Written, all_params: list[Params]) -> bool:
        """Each parameter reaches the task as DAGQ_VAR_<param>: no env entry may set one."""
        names = dict.fromkeys(key for params in all_params for key in params)
        try:
            generated = variable_env(dict.fromkeys(names, ""))
        except TemplateSyntaxError as exc:  # (not with identifier names; kept for safety)
            self.issues.add(f"{w.loc}.foreach", str(exc), w.spec.name)
            return False
        ok = True
        for loc, env in ((f"{w.loc}.kwargs.env", w.spec.kwargs.env), ("env", self.spec.env)):
            for key in env.keys() & generated.keys():
                self.issues.add(
                    f"{loc}.{key}",
                    f"{key} is set by dagq to the value of foreach parameter"
                    f" {key.removeprefix('DAGQ_VAR_')!r}: remove it or rename it",
                    w.spec.name,
                )
                ok = False
        return ok

    def check_values(self, w: _Written, e: _Expansion, label: str) -> None:
        """Checks of one final task's values (after templating)."""
        loc, name, add = w.loc, w.spec.name, self.issues.add
        cmd = e.cmd
        if len(cmd) * 4 > MAX_CMD_BYTES and len(cmd.encode("utf-8", "replace")) > MAX_CMD_BYTES:
            add(
                f"{loc}.kwargs.cmd",
                f"{label}cmd is {len(cmd.encode('utf-8', 'replace')):,} bytes; the limit is"
                f" {MAX_CMD_BYTES:,} (put long scripts in a file and run that)",
                name,
            )
        if "\x00" in cmd:
            add(f"{loc}.kwargs.cmd", f"{label}cmd must not contain NUL characters", name)
        if not cmd.strip():
            add(f"{loc}.kwargs.cmd", f"{label}cmd is empty", name)
        if e.env:
            env_bytes = _env_bytes(e.env)
            if env_bytes > MAX_ENV_BYTES:
                add(
                    f"{loc}.kwargs.env",
                    f"{label}the environment (workflow env + task env) is {env_bytes:,}"
                    f" characters; the limit is {MAX_ENV_BYTES:,}",
                    name,
                )
        if e.cwd is not None:
            if not e.cwd or _CONTROL_RE.search(e.cwd):
                add(
                    f"{loc}.kwargs.cwd",
                    f"{label}cwd must be a non-empty path without control characters,"
                    f" got {e.cwd!r}",
                    name,
                )
            elif len(e.cwd) > MAX_CWD_CHARS:
                add(f"{loc}.kwargs.cwd", f"{label}cwd is longer than {MAX_CWD_CHARS}", name)
        # An invalid default_queue is reported once, not for every task that inherits it.
        if w.spec.queue is not None:
            problem = queue_name_problem(e.queue)
            if problem:
                add(f"{loc}.queue", f"{label}{problem}", name)

    # -- dependencies ----------------------------------------------------------------------
    def resolve_dependencies(self) -> None:
        groups = {w.spec.name: w for w in self.written if w.spec.foreach is not None}
        owner, issues = self.owner, self.issues
        edges = 0
        for w in self.written:
            task = w.spec
            if not task.depends_on:
                if task.condition is not None:
                    self.check_condition(w, [])
                continue
            w.deps, dep_error = self.resolve(w, groups)
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
                self.check_condition(w, names)

    def resolve(self, w: _Written, groups: Mapping[str, _Written]) -> tuple[list[int], bool]:
        """The task numbers ``w`` depends on, and whether a problem was reported. Stops at
        ``MAX_DEPENDENCIES``, so one task costs at most that many steps."""
        number_of, owner, issues, task = self.number_of, self.owner, self.issues, w.spec
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
            elif entry in self.unparsed:
                dep_error = True  # that task's own problems are reported already
                continue
            else:
                issues.add(loc, partial(self.unknown_dependency, entry), task.name)
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

    def unknown_dependency(self, entry: str) -> str:
        if self._names is None:  # (built once: a definition may name thousands of unknowns)
            self._names = [
                *(w.spec.name for w in self.written if w.spec.foreach is not None),
                *self.number_of,
            ]
        return f"unknown dependency {entry!r}{self.suggester.hint(entry, self._names)}"

    def check_condition(self, w: _Written, parents: Sequence[str]) -> None:
        condition = w.spec.condition
        assert condition is not None
        loc = f"{w.loc}.condition"
        if not parents:
            self.issues.add(
                loc,
                "a condition reads the outputs of dependencies, but the task has none: add"
                " depends_on or remove the condition",
                w.spec.name,
            )
            return
        try:
            compile_condition(condition, parents, self.match_budget)
        except ConditionError as exc:
            self.issues.add(loc, str(exc), w.spec.name)

    def check_acyclic(self) -> None:
        """Kahn's algorithm over written tasks (expansions share their group's dependencies)."""
        written, owner = self.written, self.owner
        parents = [[owner[n].index for n in w.deps] for w in written]
        children: list[list[int]] = [[] for _ in written]
        indegree = [len(p) for p in parents]
        for child, ps in enumerate(parents):
            for p in ps:
                children[p].append(child)
        ready = deque(i for i, d in enumerate(indegree) if d == 0)
        done = 0
        while ready:
            node = ready.popleft()
            done += 1
            for child in children[node]:
                indegree[child] -= 1
                if indegree[child] == 0:
                    ready.append(child)
        if done == len(written):
            return
        # Every task left has a parent left: walk parents until one repeats.
        order: list[int] = []
        position: dict[int, int] = {}
        node = next(i for i, d in enumerate(indegree) if d > 0)
        while node not in position:
            position[node] = len(order)
            order.append(node)
            node = next(p for p in parents[node] if indegree[p] > 0)
        names = [written[i].spec.name for i in order[position[node] :]]
        chain = ", which depends on ".join(repr(n) for n in [*names, names[0]])
        first = written[order[position[node]]]
        self.issues.add(
            f"{first.loc}.depends_on",
            f"dependency cycle: {chain} (tasks in the cycle: {', '.join(names)})",
            first.spec.name,
        )

    # -- foreach_from ------------------------------------------------------------------------
    def check_dynamic(self) -> None:
        """Resolve each ``foreach_from``: a direct dependency that is one plain task, a path, and
        templates of ``{{ item }}`` / ``{{ item.<key> }}`` only (see ``shared.foreach_from``)."""
        for w in self.written:
            task = w.spec
            if task.foreach_from is None:
                continue
            loc, add = f"{w.loc}.foreach_from", self.issues.add
            if task.foreach is not None:
                add(loc, "a task has either foreach or foreach_from, not both", task.name)
                continue
            self.check_dynamic_templates(w)
            found = parse_reference(task.foreach_from, task.depends_on)
            if isinstance(found, str):
                add(loc, found, task.name)
                continue
            parent, path = found
            source = self.number_of.get(parent)
            theirs = next((o for o in self.written if o.spec.name == parent), None)
            if theirs is not None and theirs.spec.foreach is not None:
                add(loc, f"{parent!r} is a foreach of several tasks: name one task", task.name)
                continue
            if theirs is not None and theirs.spec.foreach_from is not None:
                add(loc, f"{parent!r} is a foreach_from task: it has no output", task.name)
                continue
            if source is None:
                continue  # an unknown dependency: reported already
            w.dynamic = ExpandFrom(source, path, self.max_expansion_width)

    def check_dynamic_templates(self, w: _Written) -> None:
        kwargs, loc = w.spec.kwargs, f"{w.loc}.kwargs"
        field = "cmd"
        try:
            cmd = parse_command(kwargs.cmd)
            env: dict[str, Template] = {}
            for key, value in kwargs.env.items():
                field = f"env.{key}"
                env[key] = parse_template(value)
        except TemplateSyntaxError as exc:
            self.issues.add(f"{loc}.{field}", str(exc), w.spec.name)
            return
        for field, problem in template_problems(cmd, env):
            self.issues.add(f"{loc}.{field}", problem, w.spec.name)
        for field, text in (("kwargs.cwd", kwargs.cwd), ("queue", w.spec.queue)):
            if text is not None and "{{" in text:
                self.issues.add(
                    f"{w.loc}.{field}",
                    "a foreach_from task cannot template its cwd or queue (only cmd and env)",
                    w.spec.name,
                )

    # -- output ----------------------------------------------------------------------------
    def task_defs(self, w: _Written) -> list[TaskDef]:
        task, spec = w.spec, self.spec
        parents = tuple(w.deps)
        retry = _retry_policy(task.retry)
        timeout = task.timeout_s if task.timeout_s is not None else spec.default_task_timeout_s
        group = task.name if task.foreach is not None else None
        return [
            TaskDef(
                name=e.name,
                cmd=e.cmd,
                queue=e.queue,
                env=e.env,
                cwd=e.cwd,
                parents=parents,
                dep_policy=task.dep_policy,
                timeout_s=timeout,
                queue_timeout_s=task.queue_timeout_s,
                num_retries=task.num_retries,
                retry=retry,
                condition=task.condition,
                group=group,
                params=e.params,
                expand=w.dynamic,
            )
            for e in w.expansions
        ]


def _unknown_variable(suggester: Suggester, var: str, known: list[str]) -> str:
    return (
        f"unknown template variable {{{{ {var} }}}}{suggester.hint(var, known)}"
        f" (foreach parameters: {', '.join(known)})"
    )


def _env_bytes(env: Mapping[str, str]) -> int:
    return sum(len(k) + len(v) + 2 for k, v in env.items())


def _listed_twice(entry: str, earlier: str, dep_name: str) -> str:
    if entry == earlier:
        return f"dependency {entry!r} is listed twice"
    return f"{entry!r} and {earlier!r} both include {dep_name!r}: list each dependency once"


def _retry_policy(retry: RetrySpec | None) -> RetryPolicy:
    if retry is None:
        return _DEFAULT_RETRY
    codes = tuple(retry.retry_on_exit_codes) if retry.retry_on_exit_codes is not None else None
    return RetryPolicy(
        initial_delay_s=retry.initial_delay_s,
        multiplier=retry.multiplier,
        max_delay_s=retry.max_delay_s,
        jitter=retry.jitter,
        retry_on_exit_codes=codes,
    )
