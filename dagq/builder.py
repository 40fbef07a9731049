"""Workflows built in Python: ``Workflow`` and its ``task`` handles -> ordinary dagq YAML.

What the builder produces is the definition of docs/workflow-format.md, checked by the same
compiler as the API (``shared.definition.compile_text``). Each task remembers the file and line of
the ``wf.task(...)`` call that made it, and the issues of a ``DefinitionError`` name it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from shared.client.operations import param_query
from shared.definition import CompiledWorkflow, compile_text
from shared.errors import DefinitionError, Issue

DepPolicy = Literal["all", "any", "all_settled"]
ResultPolicy = Literal["all_sinks_succeed", "all_tasks_succeed"]
ParamType = Literal["string", "number", "bool"]
Scalar = str | int | float | bool

_WORKFLOW_KEYS = (
    "default_queue",
    "default_task_timeout_s",
    "max_parallelism",
    "result_policy",
    "env",
    "notify",
    "params",
)


@dataclass(frozen=True)
class Task:
    """A task of a ``Workflow``: pass it in a later task's ``after=``."""

    name: str
    spec: Mapping[str, Any]
    """The task as docs/workflow-format.md writes it (``name``, ``kwargs``, ``depends_on``...)."""
    where: str | None = None
    """``file:line`` of the call that made the task (None: made from a definition)."""

    def output(self, path: str) -> str:
        """``inputs.<this task>.<path>``: a parent's output field, for ``condition`` or
        ``foreach_from`` of a task downstream."""
        return f"inputs.{self.name}.{path}"


@dataclass
class Workflow:
    """A workflow definition under construction.

    ``Workflow(name, default_queue=..., default_task_timeout_s=..., max_parallelism=...,
    result_policy=..., env=..., notify=..., params=...)``: the workflow-level keys of
    docs/workflow-format.md; unset keys are left out of the definition (the format's defaults
    apply). ``wf.param(name, default)`` declares one parameter and returns its placeholder.
    """

    name: str
    default_queue: str | None = None
    default_task_timeout_s: float | None = None
    max_parallelism: int | None = None
    result_policy: ResultPolicy | None = None
    env: Mapping[str, str] | None = None
    notify: Sequence[Mapping[str, Any]] | None = None
    """Webhooks told when the run ends: ``[{"url": ..., "events": [...], "secret": ...,
    "format": "json" | "slack" | "teams"}]`` (docs/notifications.md)."""
    params: Mapping[str, Scalar | Mapping[str, Any] | None] | None = None
    tasks: list[Task] = field(default_factory=list)

    def param(
        self,
        name: str,
        default: Scalar | None = None,
        *,
        description: str | None = None,
        type: ParamType | None = None,
    ) -> str:
        """Declare a workflow parameter (``params:``; no default: required at submit) and return
        its placeholder ``{{ params.NAME }}`` for ``cmd``, ``env`` values and ``cwd``."""
        declared: Scalar | dict[str, Any] | None = default
        if description is not None or type is not None:
            declared = {}
            _put(declared, "default", default)
            _put(declared, "description", description)
            _put(declared, "type", type)
        self.params = {**(self.params or {}), name: declared}
        return f"{{{{ params.{name} }}}}"

    def task(
        self,
        name: str,
        *,
        cmd: str,
        after: Iterable[Task | str] = (),
        queue: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        dep_policy: DepPolicy | None = None,
        condition: str | None = None,
        foreach: Sequence[Mapping[str, Scalar]] | Mapping[str, Sequence[Scalar]] | None = None,
        foreach_from: str | None = None,
        retries: int | None = None,
        retry: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
        queue_timeout_s: float | None = None,
        cache: bool | Mapping[str, Any] | None = None,
        gpus: int | None = None,
    ) -> Task:
        """Add a task; every keyword is the key of docs/workflow-format.md of the same name,
        except ``after`` (``depends_on``: tasks or names), ``cmd``/``env``/``cwd`` (in
        ``kwargs``) and ``retries`` (``num_retries``; ``retry`` is the backoff mapping)."""
        kwargs: dict[str, Any] = {"cmd": cmd}
        _put(kwargs, "env", None if env is None else dict(env))
        _put(kwargs, "cwd", cwd)
        spec: dict[str, Any] = {"name": name, "kwargs": kwargs}
        parents = [p.name if isinstance(p, Task) else p for p in after]
        if parents:
            spec["depends_on"] = parents
        for key, value in (
            ("queue", queue),
            ("dep_policy", dep_policy),
            ("condition", condition),
            ("foreach", _plain(foreach)),
            ("foreach_from", foreach_from),
            ("num_retries", retries),
            ("retry", _plain(retry)),
            ("timeout_s", timeout_s),
            ("queue_timeout_s", queue_timeout_s),
            ("cache", _plain(cache)),
            ("gpus", gpus),
        ):
            _put(spec, key, value)
        handle = Task(name, spec, _caller())
        self.tasks.append(handle)
        return handle

    # -- the definition --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The definition as docs/workflow-format.md writes it (a plain, JSON-able mapping)."""
        out: dict[str, Any] = {"name": self.name}
        for key in _WORKFLOW_KEYS:
            value = getattr(self, key)
            _put(out, key, _plain(value))
        out["tasks"] = [_plain(t.spec) for t in self.tasks]
        return out

    def to_yaml(self) -> str:
        """The definition as YAML text (what ``dagq submit`` takes)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=1000)

    def validate(self, params: Mapping[str, Scalar] | None = None) -> CompiledWorkflow:
        """Compile as the API does (with these parameter values, as a submit gives them; without
        them a required parameter needs none); raise
        ``DefinitionError`` with every issue, each naming the ``file:line`` of the task's
        ``wf.task(...)`` call."""
        texts = None
        if params is not None:  # as the client sends them: NAME=text
            texts = dict(item.partition("=")[::2] for item in param_query(params))
        try:
            return compile_text(
                self.to_yaml(), source=f"workflow {self.name!r}", fmt="yaml", params=texts,
                require_params=params is not None,
            )  # fmt: skip
        except DefinitionError as exc:
            raise DefinitionError([self._locate(i) for i in exc.issues], exc.source) from None

    def _locate(self, issue: Issue) -> Issue:
        where = next((t.where for t in self.tasks if t.name == issue.task and t.where), None)
        if where is None:
            return issue
        return Issue(issue.location, f"{issue.message} (task defined at {where})", issue.task)

    # -- from a definition -----------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Workflow:
        """A builder holding this definition (its tasks as written, unchecked)."""
        wf = cls(str(data["name"]), **{k: data[k] for k in _WORKFLOW_KEYS if k in data})
        extra = set(data) - {"name", "tasks", *_WORKFLOW_KEYS}
        if extra:
            raise ValueError(f"unknown workflow keys: {sorted(extra)}")
        for spec in data.get("tasks") or []:
            wf.tasks.append(Task(str(spec["name"]), _plain(spec)))
        return wf

    @classmethod
    def from_yaml(cls, text: str | Path) -> Workflow:
        """A builder from YAML or JSON text, or a file of it."""
        if isinstance(text, Path):
            text = text.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        if not isinstance(data, Mapping):
            raise ValueError("a workflow definition is a mapping")
        return cls.from_dict(data)


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        target[key] = value


def _plain(value: Any) -> Any:
    """A deep copy of mappings and sequences as dicts and lists (what YAML and JSON write)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _caller() -> str | None:
    """``file:line`` of the frame that called ``Workflow.task``."""
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
