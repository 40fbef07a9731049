"""Definition text -> validated, expanded ``CompiledWorkflow``, reporting every problem at once.

Two steps, each raising ``shared.errors.DefinitionError`` with all the issues it found:

1. ``parse_definition``: bytes/text -> ``WorkflowSpec`` (UTF-8, YAML or JSON syntax, shape, types,
   unknown keys with "did you mean").
2. ``compile_workflow``: ``WorkflowSpec`` -> ``CompiledWorkflow`` (names, foreach expansion and
   templates, queues, env, dependencies, dep_policy, conditions, cycles, limits).

Every check is linear in the size of the definition (a 100,000-task workflow validates in well
under a second): the API runs this on each submit.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from shared.conditions import compile_condition
from shared.errors import ConditionError, DefinitionError, Issue
from shared.foreach import (
    Params,
    Template,
    TemplateSyntaxError,
    expand,
    expansion_count,
    expansion_name,
    parse_template,
)
from shared.names import queue_name_problem, safe_name_problem
from shared.spec import RetrySpec, TaskKwargs, TaskSpec, WorkflowSpec
from shared.workflow import CompiledWorkflow, RetryPolicy, TaskDef

# -- limits (documented in docs/workflow-format.md) -------------------------------------------
MAX_DEFINITION_BYTES = 4 * 1024 * 1024
"""Largest definition accepted, in bytes of UTF-8."""
MAX_TASKS = 100_000
"""Most tasks in a workflow, after foreach expansion."""
MAX_EXPANSIONS = 10_000
"""Most tasks one foreach may expand to."""
MAX_DEPENDENCIES = 10_000
"""Most dependencies of one task, after foreach fan-in is expanded."""
MAX_EDGES = 2_000_000
"""Most dependency edges in a workflow, after expansion."""
MAX_CMD_BYTES = 16 * 1024
"""Longest ``cmd`` of one task, in UTF-8 bytes after templating."""
MAX_ENV_BYTES = 16 * 1024
"""Largest environment of one task (workflow env merged with the task's), as NAME=value bytes."""
MAX_CWD_CHARS = 1024
"""Longest ``cwd``."""
MAX_WORKFLOW_NAME = 200
"""Longest workflow name."""
MAX_YAML_NODES = 2_000_000
"""Most YAML nodes after alias expansion (stops "billion laughs" documents)."""
MAX_REPEATS_PER_LOCATION = 3
"""Issues shown per location before the rest are summarised (one bad value x 10,000 expansions)."""

Format = Literal["yaml", "json"]

_ENV_NAME_RE = re.compile(r"^[^=\x00]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


# ==============================================================================================
# 1. parsing
# ==============================================================================================


def parse_definition(
    data: str | bytes, *, source: str = "<input>", fmt: Format | None = None
) -> WorkflowSpec:
    """Parse YAML or JSON text (``fmt=None``: JSON if it starts with ``{``) into a WorkflowSpec.

    Raises DefinitionError listing every problem: bad UTF-8, syntax errors (with line and column),
    a top level that is not a mapping, unknown keys, wrong types or values.
    """
    text = _decode(data, source)
    raw = _load(text, source, fmt)
    if not isinstance(raw, dict):
        raise DefinitionError(
            [
                Issue(
                    "(top level)",
                    "a workflow definition is a mapping with 'name' and 'tasks', got"
                    f" {_type_name(raw)}",
                )
            ],
            source,
        )
    try:
        return WorkflowSpec.model_validate(raw)
    except ValidationError as exc:
        raise DefinitionError(_shape_issues(exc, raw), source) from None


def _decode(data: str | bytes, source: str) -> str:
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_DEFINITION_BYTES:
        raise DefinitionError(
            [
                Issue(
                    "(file)",
                    f"the definition is {size:,} bytes; the limit is {MAX_DEFINITION_BYTES:,}"
                    " (use foreach instead of writing out many similar tasks)",
                )
            ],
            source,
        )
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DefinitionError(
            [Issue(f"line {line}", f"not valid UTF-8 (byte {exc.start}): save the file as UTF-8")],
            source,
        ) from None


def _load(text: str, source: str, fmt: Format | None) -> Any:
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "yaml"
    if fmt == "json":
        try:
            return json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant)
        except json.JSONDecodeError as exc:
            raise DefinitionError(
                [Issue(f"line {exc.lineno}, column {exc.colno}", f"JSON syntax error: {exc.msg}")],
                source,
            ) from None
        except _DuplicateKeyError as exc:
            raise DefinitionError([Issue("(json)", str(exc))], source) from None
        except RecursionError:
            raise DefinitionError([Issue("(json)", "JSON nested too deeply")], source) from None
    return _load_yaml(text, source)


class _DuplicateKeyError(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"key {key!r} appears twice in the same object")
        out[key] = value
    return out


def _json_constant(name: str) -> Any:
    raise _DuplicateKeyError(f"{name} is not valid JSON (use a finite number)")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (YAML would silently keep the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable keys: SafeLoader reports them itself
            if duplicate:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in the same mapping", mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, source: str) -> Any:
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise DefinitionError(
                [
                    Issue(
                        "(yaml)",
                        f"the document expands to more than {MAX_YAML_NODES:,} nodes through"
                        " aliases",
                    )
                ],
                source,
            )
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise DefinitionError([Issue(where, f"YAML error: {what}")], source) from None
    except yaml.YAMLError as exc:
        raise DefinitionError([Issue("(yaml)", f"YAML error: {exc}")], source) from None
    except RecursionError:
        raise DefinitionError([Issue("(yaml)", "YAML nested too deeply")], source) from None
    finally:
        loader.dispose()


def _expanded_size(root: yaml.Node) -> int:
    """Node count with aliases expanded, computed in linear time over the distinct nodes."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        if children_done:
            sizes[id(node)] = min(1 + sum(sizes[id(k)] for k in kids), MAX_YAML_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)]


# -- pydantic errors -> issues ------------------------------------------------------------------

_MODEL_AT: dict[tuple[str, ...], type[Any]] = {
    (): WorkflowSpec,
    ("tasks", "*"): TaskSpec,
    ("tasks", "*", "kwargs"): TaskKwargs,
    ("tasks", "*", "retry"): RetrySpec,
}


def _shape_issues(exc: ValidationError, raw: dict[str, Any]) -> list[Issue]:
    issues: list[Issue] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        location, task = _render_loc(loc, raw)
        issues.append(Issue(location, _error_message(error, loc), task))
    return issues


def _render_loc(loc: tuple[Any, ...], raw: dict[str, Any]) -> tuple[str, str | None]:
    """``('tasks', 3, 'kwargs', 'cmd')`` -> ``tasks.train.kwargs.cmd`` once the name is known."""
    parts: list[str] = []
    task: str | None = None
    for i, part in enumerate(loc):
        if isinstance(part, int):
            if i == 1 and loc[0] == "tasks":
                name = _task_name_at(raw, part)
                if name is not None:
                    task = name
                    parts.append(f".{name}")
                    continue
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    return ("".join(parts) or "(top level)"), task


def _task_name_at(raw: dict[str, Any], index: int) -> str | None:
    tasks = raw.get("tasks")
    if isinstance(tasks, list) and index < len(tasks) and isinstance(tasks[index], dict):
        name = tasks[index].get("name")
        if isinstance(name, str) and name and safe_name_problem(name) is None:
            return name
    return None


def _error_message(error: Any, loc: tuple[Any, ...]) -> str:
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _MODEL_AT.get(tuple("*" if isinstance(p, int) else p for p in loc[:-1]))
        known = list(model.model_fields) if model is not None else []
        hint = _did_you_mean(key, known)
        allowed = f" (allowed here: {', '.join(known)})" if known and not hint else ""
        return f"unknown key {key!r}{hint}{allowed}"
    if kind == "missing":
        return f"required key {str(loc[-1])!r} is missing"
    if kind in ("value_error", "assertion_error"):
        return str(error["msg"]).removeprefix("Value error, ")
    if kind.endswith("_type") or kind in ("literal_error", "enum"):
        expected = _A_VALID_RE.sub(_article, str(error["msg"]).removeprefix("Input should be "))
        hint = ""
        if kind == "string_type" and isinstance(given, int | float | bool):
            hint = " (quote it in YAML)"
        return f"expected {expected}, got {_type_name(given)} {_short(given)}{hint}".rstrip()
    message = str(error["msg"]).replace("Input should be", "must be")
    return f"{message}, got {_short(given)}" if _short(given) else message


_A_VALID_RE = re.compile(r"\ba valid (\w)")


def _article(match: re.Match[str]) -> str:
    letter = match.group(1)
    return ("an " if letter in "aeiou" else "a ") + letter


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    pool = list(candidates)
    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.6) if len(pool) < 20_000 else []
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _short(value: Any) -> str:
    if isinstance(value, dict | list):
        return ""
    text = json.dumps(value) if isinstance(value, str | int | float | bool) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ==============================================================================================
# 2. compiling
# ==============================================================================================


class _Issues:
    """Collects issues, summarising a location repeated by many expansions."""

    def __init__(self) -> None:
        self.items: list[Issue] = []
        self._per_location: dict[str, int] = defaultdict(int)

    def add(self, location: str, message: str, task: str | None = None) -> None:
        self._per_location[location] += 1
        if self._per_location[location] <= MAX_REPEATS_PER_LOCATION:
            self.items.append(Issue(location, message, task))

    def finish(self) -> list[Issue]:
        for location, count in self._per_location.items():
            extra = count - MAX_REPEATS_PER_LOCATION
            if extra > 0:
                task = next((i.task for i in self.items if i.location == location), None)
                self.items.append(Issue(location, f"... and {extra} more like the above", task))
        return self.items

    def __bool__(self) -> bool:
        return bool(self.items)


class _Written:
    """One task as written, with what the compiler derived from it."""

    __slots__ = ("broken", "deps", "first", "index", "loc", "names", "spec")

    def __init__(self, index: int, spec: TaskSpec, loc: str) -> None:
        self.index = index
        self.spec = spec
        self.loc = loc
        self.names: list[str] = []
        """Final task names (one, or one per expansion)."""
        self.first = 0
        """Task number of the first of them."""
        self.deps: list[int] = []
        """Resolved parent task numbers (the same for every expansion)."""
        self.broken = False
        """Its foreach could not be expanded (already reported): dependents skip their checks."""


def compile_workflow(spec: WorkflowSpec, *, source_text: str | None = None) -> CompiledWorkflow:
    """Expand foreach, merge env, resolve defaults and validate the graph.

    Raises DefinitionError with every issue found.
    """
    return _compile(spec, source_text, "<input>")


def load_workflow(
    data: str | bytes, *, source: str = "<input>", fmt: Format | None = None
) -> CompiledWorkflow:
    """Parse and compile in one step (what the API and ``dagq validate`` do)."""
    spec = parse_definition(data, source=source, fmt=fmt)
    text = data if isinstance(data, str) else data.decode("utf-8-sig")
    return _compile(spec, text, source)


def _compile(spec: WorkflowSpec, source_text: str | None, source: str) -> CompiledWorkflow:
    issues = _Issues()
    _check_workflow_fields(spec, issues)
    written = _written_tasks(spec, issues)
    task_defs, number_of = _expand_all(spec, written, issues)
    if len(task_defs) > MAX_TASKS:
        issues.add(
            "tasks",
            f"the workflow has {len(task_defs):,} tasks after foreach expansion; the limit is"
            f" {MAX_TASKS:,}",
        )
        raise DefinitionError(issues.finish(), source)
    _resolve_dependencies(spec, written, number_of, task_defs, issues)
    _check_acyclic(written, task_defs, issues)
    if issues:
        raise DefinitionError(issues.finish(), source)
    tasks = [_finish(written_task, task_defs) for written_task in written]
    return CompiledWorkflow.of(
        spec.name,
        [t for group in tasks for t in group],
        max_parallelism=spec.max_parallelism,
        result_policy=spec.result_policy,
        source=source_text,
    )


def _check_workflow_fields(spec: WorkflowSpec, issues: _Issues) -> None:
    if not spec.name.strip():
        issues.add("name", "the workflow name must not be empty")
    elif len(spec.name) > MAX_WORKFLOW_NAME:
        issues.add("name", f"the workflow name is longer than {MAX_WORKFLOW_NAME} characters")
    elif _CONTROL_RE.search(spec.name):
        issues.add("name", "the workflow name must not contain control characters")
    problem = queue_name_problem(spec.default_queue)
    if problem:
        issues.add("default_queue", problem)
    _check_env(spec.env, "env", None, issues)
    if not spec.tasks:
        issues.add("tasks", "the workflow has no tasks: add at least one")


def _check_env(env: Mapping[str, str], loc: str, task: str | None, issues: _Issues) -> None:
    for key, value in env.items():
        if not _ENV_NAME_RE.match(key):
            issues.add(
                f"{loc}.{key}", f"invalid environment variable name {key!r} (no '=' or NUL)", task
            )
        if "\x00" in value:
            issues.add(f"{loc}.{key}", "environment values must not contain NUL characters", task)


def _written_tasks(spec: WorkflowSpec, issues: _Issues) -> list[_Written]:
    out: list[_Written] = []
    for i, task in enumerate(spec.tasks):
        problem = safe_name_problem(task.name)
        if problem:
            issues.add(f"tasks[{i}].name", problem, task.name or None)
            loc = f"tasks[{i}]"
        else:
            loc = f"tasks.{task.name}"
        out.append(_Written(i, task, loc))
    return out


class _Templates:
    """The templated fields of one foreach task, parsed once."""

    def __init__(self, cmd: Template, env: dict[str, Template], cwd: Template | None) -> None:
        self.cmd = cmd
        self.env = env
        self.cwd = cwd

    def variables(self) -> set[str]:
        names = set(self.cmd.variables)
        for template in self.env.values():
            names.update(template.variables)
        if self.cwd is not None:
            names.update(self.cwd.variables)
        return names


def _expand_all(
    spec: WorkflowSpec, written: list[_Written], issues: _Issues
) -> tuple[list[TaskDef], dict[str, int]]:
    """Expand every written task into TaskDefs (parents filled in later); check names/fields."""
    task_defs: list[TaskDef] = []
    number_of: dict[str, int] = {}
    written_names: dict[str, _Written] = {}
    for w in written:
        task = w.spec
        duplicate = task.name in written_names
        if duplicate:
            first = written_names[task.name]
            issues.add(
                f"{w.loc}.name",
                f"duplicate task name {task.name!r} (also tasks[{first.index}])",
                task.name,
            )
        else:
            written_names[task.name] = w
        w.first = len(task_defs)
        if task.foreach is None:
            defs = [_plain_task(spec, w, issues)]
        else:
            defs = _foreach_tasks(spec, w, issues)
            w.broken = not defs
        for task_def in defs:
            other = number_of.get(task_def.name)
            if other is None:
                number_of[task_def.name] = len(task_defs)
            elif duplicate:
                pass  # reported once above
            elif task.foreach is not None:
                issues.add(
                    f"{w.loc}.foreach",
                    f"expansion {task_def.name!r} has the same name as another task"
                    f" ({_describe(task_defs[other])})",
                    task.name,
                )
            else:
                issues.add(
                    f"{w.loc}.name",
                    f"duplicate task name {task.name!r} ({_describe(task_defs[other])} has the"
                    " same name)",
                    task.name,
                )
            w.names.append(task_def.name)
            task_defs.append(task_def)
        if len(task_defs) > MAX_TASKS:
            break
    # A foreach task's written name is how others depend on it: it must not clash with a task.
    for w in written:
        if w.spec.foreach is not None and w.spec.name in number_of:
            other_def = task_defs[number_of[w.spec.name]]
            if other_def.group != w.spec.name:
                issues.add(
                    f"{w.loc}.name",
                    f"foreach task name {w.spec.name!r} is also the name of another task",
                    w.spec.name,
                )
    return task_defs, number_of


def _describe(task_def: TaskDef) -> str:
    if task_def.group is not None:
        return f"an expansion of foreach task {task_def.group!r}"
    return f"task {task_def.name!r}"


def _resolve_queue(spec: WorkflowSpec, task: TaskSpec) -> str:
    return task.queue if task.queue is not None else spec.default_queue


def _retry_policy(retry: RetrySpec | None) -> RetryPolicy:
    if retry is None:
        return RetryPolicy()
    codes = tuple(retry.retry_on_exit_codes) if retry.retry_on_exit_codes is not None else None
    return RetryPolicy(
        initial_delay_s=retry.initial_delay_s,
        multiplier=retry.multiplier,
        max_delay_s=retry.max_delay_s,
        jitter=retry.jitter,
        retry_on_exit_codes=codes,
    )


def _base_def(
    spec: WorkflowSpec,
    task: TaskSpec,
    *,
    name: str,
    cmd: str,
    env: dict[str, str],
    cwd: str | None,
    queue: str,
    group: str | None = None,
    params: Params | None = None,
) -> TaskDef:
    merged_env = {**spec.env, **env} if spec.env else env
    return TaskDef(
        name=name,
        cmd=cmd,
        queue=queue,
        env=merged_env,
        cwd=cwd,
        dep_policy=task.dep_policy,
        timeout_s=task.timeout_s if task.timeout_s is not None else spec.default_task_timeout_s,
        queue_timeout_s=task.queue_timeout_s,
        num_retries=task.num_retries,
        retry=_retry_policy(task.retry),
        condition=task.condition,
        group=group,
        params=params,
    )


def _check_task_fields(w: _Written, task_def: TaskDef, issues: _Issues, label: str = "") -> None:
    """Checks that apply to the final values of one task (after templating)."""
    loc, name = w.loc, w.spec.name
    cmd_bytes = len(task_def.cmd.encode("utf-8", "surrogatepass"))
    if cmd_bytes > MAX_CMD_BYTES:
        issues.add(
            f"{loc}.kwargs.cmd",
            f"{label}cmd is {cmd_bytes:,} bytes; the limit is {MAX_CMD_BYTES:,} (put long scripts"
            " in a file and run that)",
            name,
        )
    if "\x00" in task_def.cmd:
        issues.add(f"{loc}.kwargs.cmd", f"{label}cmd must not contain NUL characters", name)
    if not task_def.cmd.strip():
        issues.add(f"{loc}.kwargs.cmd", f"{label}cmd is empty", name)
    env_bytes = sum(len(k) + len(v) + 2 for k, v in task_def.env.items())
    if env_bytes > MAX_ENV_BYTES:
        issues.add(
            f"{loc}.kwargs.env",
            f"{label}the environment (workflow env + task env) is {env_bytes:,} bytes; the limit"
            f" is {MAX_ENV_BYTES:,}",
            name,
        )
    if task_def.cwd is not None:
        if not task_def.cwd or _CONTROL_RE.search(task_def.cwd):
            issues.add(
                f"{loc}.kwargs.cwd",
                f"{label}cwd must be a non-empty path without control characters,"
                f" got {task_def.cwd!r}",
                name,
            )
        elif len(task_def.cwd) > MAX_CWD_CHARS:
            issues.add(
                f"{loc}.kwargs.cwd", f"{label}cwd is longer than {MAX_CWD_CHARS} characters", name
            )
    # An invalid default_queue is reported once, not for every task that inherits it.
    problem = queue_name_problem(task_def.queue) if w.spec.queue is not None else None
    if problem:
        issues.add(f"{loc}.queue", f"{label}{problem}", name)


def _plain_task(spec: WorkflowSpec, w: _Written, issues: _Issues) -> TaskDef:
    task = w.spec
    kwargs = task.kwargs
    _check_env(kwargs.env, f"{w.loc}.kwargs.env", task.name, issues)
    task_def = _base_def(
        spec,
        task,
        name=task.name,
        cmd=kwargs.cmd,
        env=dict(kwargs.env),
        cwd=kwargs.cwd,
        queue=_resolve_queue(spec, task),
    )
    _check_task_fields(w, task_def, issues)
    return task_def


def _foreach_tasks(spec: WorkflowSpec, w: _Written, issues: _Issues) -> list[TaskDef]:
    task = w.spec
    foreach = task.foreach
    assert foreach is not None
    count = expansion_count(foreach)
    if count == 0:
        issues.add(
            f"{w.loc}.foreach",
            "foreach expands to no tasks (an empty list of values): give at least one",
            task.name,
        )
        return []
    if count > MAX_EXPANSIONS:
        issues.add(
            f"{w.loc}.foreach",
            f"foreach expands to {count:,} tasks; the limit is {MAX_EXPANSIONS:,} per foreach",
            task.name,
        )
        return []
    kwargs = task.kwargs
    _check_env(kwargs.env, f"{w.loc}.kwargs.env", task.name, issues)
    templates = _parse_templates(w, issues)
    queue_template = _parse_one(task.queue, f"{w.loc}.queue", w, issues)
    if templates is None or (task.queue is not None and queue_template is None):
        return []
    variables = templates.variables()
    if queue_template is not None:
        variables.update(queue_template.variables)
    all_params = list(expand(foreach))
    if not _check_variables(w, variables, all_params, issues):
        return []
    default_queue = spec.default_queue
    out: list[TaskDef] = []
    for index, params in enumerate(all_params):
        name = expansion_name(task.name, params, index)
        task_def = _base_def(
            spec,
            task,
            name=name,
            cmd=templates.cmd.render(params, quote=True),
            env={k: t.render(params, quote=False) for k, t in templates.env.items()},
            cwd=templates.cwd.render(params, quote=False) if templates.cwd is not None else None,
            queue=(
                queue_template.render(params, quote=False)
                if queue_template is not None
                else default_queue
            ),
            group=task.name,
            params=params,
        )
        _check_task_fields(w, task_def, issues, label=f"in expansion {name!r}: ")
        out.append(task_def)
    return out


def _parse_one(text: str | None, loc: str, w: _Written, issues: _Issues) -> Template | None:
    if text is None:
        return None
    try:
        return parse_template(text)
    except TemplateSyntaxError as exc:
        issues.add(loc, str(exc), w.spec.name)
        return None


def _parse_templates(w: _Written, issues: _Issues) -> _Templates | None:
    kwargs = w.spec.kwargs
    loc = f"{w.loc}.kwargs"
    cmd = _parse_one(kwargs.cmd, f"{loc}.cmd", w, issues)
    env = {k: _parse_one(v, f"{loc}.env.{k}", w, issues) for k, v in kwargs.env.items()}
    cwd = _parse_one(kwargs.cwd, f"{loc}.cwd", w, issues)
    if cmd is None or any(t is None for t in env.values()):
        return None
    if kwargs.cwd is not None and cwd is None:
        return None
    return _Templates(cmd, {k: t for k, t in env.items() if t is not None}, cwd)


def _check_variables(
    w: _Written, variables: set[str], all_params: list[Params], issues: _Issues
) -> bool:
    ok = True
    task = w.spec
    if isinstance(task.foreach, dict):
        known = set(task.foreach)
        for var in sorted(variables - known):
            hint = _did_you_mean(var, known)
            issues.add(
                f"{w.loc}.kwargs",
                f"unknown template variable {{{{ {var} }}}}{hint} (foreach parameters:"
                f" {', '.join(sorted(known))})",
                task.name,
            )
            ok = False
        return ok
    for i, params in enumerate(all_params):
        missing = sorted(variables - params.keys())
        if missing:
            issues.add(
                f"{w.loc}.foreach[{i}]",
                f"template variable(s) {', '.join(missing)} used in the task are not set by"
                f" foreach[{i}]",
                task.name,
            )
            ok = False
    return ok


def _resolve_dependencies(
    spec: WorkflowSpec,
    written: list[_Written],
    number_of: dict[str, int],
    task_defs: list[TaskDef],
    issues: _Issues,
) -> None:
    groups: dict[str, _Written] = {w.spec.name: w for w in written if w.spec.foreach is not None}
    edges = 0
    for w in written:
        task = w.spec
        loc = f"{w.loc}.depends_on"
        own = set(w.names)
        deps: list[int] = []
        seen: dict[int, str] = {}
        dep_error = False
        for entry in task.depends_on:
            if entry == task.name:
                issues.add(loc, f"task {task.name!r} depends on itself", task.name)
                dep_error = True
                continue
            group = groups.get(entry)
            if group is not None:
                if group.broken:
                    dep_error = True
                    continue
                numbers = list(range(group.first, group.first + len(group.names)))
            elif entry in number_of:
                numbers = [number_of[entry]]
            else:
                hint = _did_you_mean(entry, [*number_of, *groups])
                issues.add(loc, f"unknown dependency {entry!r}{hint}", task.name)
                dep_error = True
                continue
            for n in numbers:
                dep_name = task_defs[n].name
                if dep_name in own:
                    issues.add(
                        loc,
                        f"task {task.name!r} depends on its own expansion {dep_name!r}",
                        task.name,
                    )
                    dep_error = True
                    break
                if n in seen:
                    issues.add(
                        loc,
                        f"{dep_name!r} is listed twice (through {seen[n]!r} and {entry!r})"
                        if seen[n] != entry
                        else f"dependency {entry!r} is listed twice",
                        task.name,
                    )
                    dep_error = True
                    break
                seen[n] = entry
                deps.append(n)
        w.deps = deps
        if len(deps) > MAX_DEPENDENCIES:
            issues.add(
                loc,
                f"task has {len(deps):,} dependencies after foreach fan-in; the limit is"
                f" {MAX_DEPENDENCIES:,}",
                task.name,
            )
        edges += len(deps) * len(w.names)
        if not dep_error:  # with a dependency missing, these checks would only add noise
            _check_policy(w, issues)
            _check_condition(w, [task_defs[n].name for n in deps], issues)
    if edges > MAX_EDGES:
        issues.add(
            "tasks",
            f"the workflow has {edges:,} dependency edges after expansion; the limit is"
            f" {MAX_EDGES:,}",
        )


def _check_policy(w: _Written, issues: _Issues) -> None:
    policy = w.spec.dep_policy
    if isinstance(policy, int) and policy > len(w.deps):
        issues.add(
            f"{w.loc}.dep_policy",
            f"dep_policy {policy} needs {policy} successful dependencies but the task has only"
            f" {len(w.deps)}",
            w.spec.name,
        )


def _check_condition(w: _Written, parents: Sequence[str], issues: _Issues) -> None:
    condition = w.spec.condition
    if condition is None:
        return
    loc = f"{w.loc}.condition"
    if not w.spec.depends_on:
        issues.add(
            loc,
            "a condition reads the outputs of dependencies, but the task has none: add"
            " depends_on or remove the condition",
            w.spec.name,
        )
        return
    try:
        compile_condition(condition, parents)
    except ConditionError as exc:
        issues.add(loc, str(exc), w.spec.name)


def _check_acyclic(written: list[_Written], task_defs: list[TaskDef], issues: _Issues) -> None:
    """Kahn's algorithm over written tasks (expansions share their group's dependencies)."""
    owner = [0] * len(task_defs)
    for w in written:
        for n in range(w.first, w.first + len(w.names)):
            owner[n] = w.index
    parents: list[list[int]] = [[owner[n] for n in w.deps] for w in written]
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
    # Every unfinished task has an unfinished parent: walk parents until one repeats.
    start = next(i for i, d in enumerate(indegree) if d > 0)
    order: list[int] = []
    position: dict[int, int] = {}
    node = start
    while node not in position:
        position[node] = len(order)
        order.append(node)
        node = next(p for p in parents[node] if indegree[p] > 0)
    cycle = order[position[node] :]
    names = [written[i].spec.name for i in cycle]
    chain = ", which depends on ".join(repr(n) for n in [*names, names[0]])
    first = written[cycle[0]]
    issues.add(
        f"{first.loc}.depends_on",
        f"dependency cycle: {chain} (tasks in the cycle: {', '.join(names)})",
        first.spec.name,
    )


def _finish(w: _Written, task_defs: list[TaskDef]) -> list[TaskDef]:
    parents = tuple(w.deps)
    out = []
    for n in range(w.first, w.first + len(w.names)):
        t = task_defs[n]
        out.append(
            TaskDef(
                name=t.name,
                cmd=t.cmd,
                queue=t.queue,
                env=t.env,
                cwd=t.cwd,
                parents=parents,
                dep_policy=t.dep_policy,
                timeout_s=t.timeout_s,
                queue_timeout_s=t.queue_timeout_s,
                num_retries=t.num_retries,
                retry=t.retry,
                condition=t.condition,
                group=t.group,
                params=t.params,
            )
        )
    return out
