"""The user-facing workflow definition format: pydantic models of what a user writes.

These models check the *shape* of a definition (keys, types, ranges). Everything that needs the
whole workflow (names, dependencies, cycles, foreach expansion, templates, limits) is checked by
``shared.definition.compiler``, which turns a ``WorkflowSpec`` into a
``shared.definition.workflow.CompiledWorkflow``.

ai4s-jobq's workflow format is a subset: every ai4s-jobq definition is a valid ``WorkflowSpec``.
dagq's extensions are ``foreach``, ``foreach_from``, ``retry``, ``queue_timeout_s``, ``cache``,
``gpus`` (per task) and ``env`` and ``params`` (per workflow).
Unknown keys are errors everywhere. The JSON Schema in
``shared/definition/schema/workflow.schema.json`` is
generated from these models (``python -m shared.definition.schema``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.limits import (
    MAX_CACHE_VERSION,
    MAX_NOTIFY_SECRET,
    MAX_NOTIFY_URL,
    MAX_TASK_GPUS,
)

Scalar = str | int | float | bool
"""A foreach parameter value."""

DepPolicySpec = Literal["all", "any", "all_settled"] | Annotated[int, Field(ge=1)]

ForeachSpec = list[dict[str, Scalar]] | dict[str, list[Scalar]]
"""A list of parameter mappings, or a matrix: parameter name -> list of values."""

_DEP_POLICIES = ("all", "any", "all_settled")


class _Spec(BaseModel):
    # strict: a YAML ``cmd: 123`` or ``num_retries: "2"`` is an error, not a silent coercion.
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )


class TaskKwargs(_Spec):
    """What a task runs: a shell command, its environment and working directory."""

    cmd: str
    """The shell command (run with ``sh -c`` by the worker). In a foreach task, ``{{ param }}``
    is replaced by the shell-quoted parameter value; it must stand where the shell reads a plain
    word (not inside quotes), and the value is also in the variable ``$DAGQ_VAR_<param>``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables, merged over the workflow's ``env``."""
    cwd: str | None = None
    """Working directory of the command (the worker's default when absent)."""


class RetrySpec(_Spec):
    """How soon a failed attempt is retried, and which failures are worth retrying (dagq)."""

    initial_delay_s: float = Field(default=0.0, ge=0)
    """Delay before the first retry, in seconds (0: at once)."""
    multiplier: float = Field(default=2.0, ge=1)
    """Each further retry waits this many times longer than the previous one."""
    max_delay_s: float = Field(default=3600.0, ge=0)
    """Upper bound of any one delay, in seconds."""
    jitter: float = Field(default=0.0, ge=0, le=1)
    """Fraction (0-1) of each delay that is randomised (deterministically per attempt)."""
    retry_on_exit_codes: list[int] | None = None
    """Exit codes worth retrying; absent or null retries every failure. Timeouts and lost workers
    are always retried while budget remains."""


class CacheSpec(_Spec):
    """Result caching options of a task (dagq): see docs/workflow-format.md, "Result caching"."""

    version: str = Field(default="", max_length=MAX_CACHE_VERSION)
    """Part of the cache key: change it to recompute results whose inputs did not change (a new
    model, a fixed bug in the script)."""
    ttl: str | int | float | None = None
    """How long an entry may be reused: ``7d``, ``12h``, ``90m``, ``3600s``, ``2w`` or seconds
    (the default is 30 days; at most 365 days)."""

    @field_validator("ttl", mode="before")
    @classmethod
    def _check_ttl(cls, value: Any) -> Any:
        # One clear message instead of pydantic's per-union-member errors.
        if value is None or (isinstance(value, str | int | float) and not isinstance(value, bool)):
            return value
        raise ValueError(
            f"ttl must be a duration such as 7d, 12h or 3600 (seconds), got {type_word(value)}"
        )


class TaskSpec(_Spec):
    """One task as written; a task with ``foreach`` stands for several tasks."""

    name: str
    """Unique task name: 1-128 of ``A-Z a-z 0-9 _ . = -`` (it names blobs and message ids)."""
    kwargs: TaskKwargs
    """The command to run (``cmd``), with optional ``env`` and ``cwd``."""
    depends_on: list[str] = Field(default_factory=list)
    """Names of the tasks this one waits for. Naming a foreach task means all its expansions."""
    queue: str | None = None
    """Task queue (hardware class), e.g. ``gpu``; the workflow's ``default_queue`` when absent."""
    dep_policy: DepPolicySpec = "all"
    """When the task may run: ``all`` parents succeeded, ``any`` one succeeded, ``all_settled``
    (all finished, at least one succeeded), or an integer N (at least N succeeded)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Run time limit of one attempt, in seconds (the workflow's default when absent)."""
    num_retries: int = Field(default=0, ge=0, le=100)
    """Retry budget: the task is attempted at most ``num_retries + 1`` times."""
    condition: str | None = None
    """An expression over the parents' outputs; when false the task is skipped (see the docs)."""
    foreach: ForeachSpec | None = None
    """Fan this task out (dagq): a list of parameter mappings, or a matrix mapping each parameter
    to a list of values (all combinations, in declared order)."""
    foreach_from: str | None = None
    """Fan this task out at run time (dagq): ``inputs.<parent>.<field path>`` names a list in the
    JSON output of a direct dependency; the task expands to one task per item when that parent
    completes, with ``{{ item }}`` (or ``{{ item.<key> }}`` for objects) in ``cmd`` and ``env``."""
    retry: RetrySpec | None = None
    """Backoff between attempts and which exit codes are retried (dagq)."""
    queue_timeout_s: float | None = Field(default=None, gt=0)
    """How long an attempt may wait for a worker before it fails as not started (dagq)."""
    cache: bool | CacheSpec = False
    """Reuse an earlier successful result when the command, environment, queue, GPUs, cache
    version and parents' outputs are the same (dagq): ``true``, or ``{version, ttl}``."""
    gpus: int | None = Field(default=None, ge=0, le=MAX_TASK_GPUS)
    """GPUs one attempt uses, for its cost and its cache key (dagq; the queue's price-table
    figure when absent). Workers hand out GPUs by their own ``--gpus-per-task``."""

    @field_validator("cache", mode="before")
    @classmethod
    def _check_cache(cls, value: Any) -> Any:
        # One clear message instead of pydantic's per-union-member errors.
        if isinstance(value, bool | dict):
            return value
        raise ValueError(
            f"cache must be true, false or a mapping {{version, ttl}}, got {type_word(value)}"
        )

    @field_validator("dep_policy", mode="before")
    @classmethod
    def _check_dep_policy(cls, value: Any) -> Any:
        # One clear message instead of pydantic's per-union-member errors.
        if isinstance(value, str) and value in _DEP_POLICIES:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        raise ValueError(
            f"dep_policy must be 'all', 'any', 'all_settled' or an integer >= 1, got {value!r}"
        )

    @field_validator("foreach", mode="before")
    @classmethod
    def _check_foreach(cls, value: Any) -> Any:
        # One clear message per problem instead of pydantic's per-union-member errors.
        if value is None:
            return value
        if isinstance(value, list):
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    raise ValueError(
                        f"foreach[{i}] must be a mapping of parameter -> value,"
                        f" got {type_word(item)}"
                    )
                if not item:
                    raise ValueError(f"foreach[{i}] is empty: give at least one parameter")
                for key, val in item.items():
                    _check_param(key, val, f"foreach[{i}].{key}")
            return value
        if isinstance(value, dict):
            for key, values in value.items():
                if not isinstance(values, list):
                    raise ValueError(
                        f"foreach.{key} must be a list of values, got {type_word(values)}"
                    )
                for j, val in enumerate(values):
                    _check_param(key, val, f"foreach.{key}[{j}]")
            return value
        raise ValueError(
            "foreach must be a list of parameter mappings or a mapping of parameter -> list of"
            f" values, got {type_word(value)}"
        )


# -- notifications (issue 29; docs/notifications.md) -----------------------------------------


NotifyEventSpec = Literal["completed", "failed", "cancelled", "task_failed"]
_DEFAULT_EVENTS: tuple[NotifyEventSpec, ...] = ("completed", "failed", "cancelled")


class NotifySpec(_Spec):
    """A webhook told when the workflow ends (dagq): see docs/notifications.md."""

    url: str = Field(max_length=MAX_NOTIFY_URL)
    """The endpoint dagq POSTs to: ``https://`` (a deployment refuses plain ``http``, loopback,
    private and link-local addresses unless its settings allow them)."""
    events: list[NotifyEventSpec] = Field(
        default_factory=lambda: list(_DEFAULT_EVENTS), min_length=1
    )
    """Which events are sent: the run ``completed``, ``failed`` or was ``cancelled``, and
    ``task_failed`` (a task failed for good, its retries spent) while it runs."""
    secret: str | None = Field(default=None, min_length=1, max_length=MAX_NOTIFY_SECRET)
    """Sign each request: the ``X-Dagq-Signature`` header is ``sha256=`` and the hex
    HMAC-SHA256, with this key, of the ``X-Dagq-Timestamp`` value, a ``.`` and the body."""
    format: Literal["json", "slack", "teams"] = "json"
    """The body: dagq's JSON (documented), or the payload of a Slack or Teams incoming webhook."""


ParamType = Literal["string", "number", "bool"]
"""The type of a workflow parameter: what a value given at submit (text) is read as."""


class ParamSpec(_Spec):
    """A workflow parameter written as a mapping (dagq): its default, description and type."""

    default: Scalar | None = None
    """The value when none is given at submit; absent or null: the parameter is required."""
    description: str | None = None
    """What the parameter means (shown by ``dagq status`` and the dashboard)."""
    type: ParamType | None = None
    """``string``, ``number`` or ``bool``; absent: the default's type (``string`` without one)."""

    @field_validator("default", mode="before")
    @classmethod
    def _check_default(cls, value: Any) -> Any:
        if value is not None:
            _check_param("params", value, "default")
        return value


ParamDeclaration = Scalar | ParamSpec | None
"""A parameter as declared: its default (string, number or bool), a mapping ``{default,
description, type}``, or null (required, a string)."""


class WorkflowSpec(_Spec):
    """A workflow definition as written (YAML or JSON)."""

    name: str
    """A display name (not unique; workflows are identified by their id)."""
    tasks: list[TaskSpec]
    """The tasks, in any order (they are numbered in this order)."""
    default_queue: str = "default"
    """Queue of tasks that name none."""
    default_task_timeout_s: float | None = Field(default=None, gt=0)
    """Run time limit of tasks that set no ``timeout_s``."""
    max_parallelism: int | None = Field(default=None, ge=1)
    """At most this many tasks of the workflow queued or running at once (null: no limit)."""
    result_policy: Literal["all_sinks_succeed", "all_tasks_succeed"] = "all_sinks_succeed"
    """``all_sinks_succeed``: the workflow completes if every sink (task nothing depends on)
    completed or was skipped. ``all_tasks_succeed``: any failed task fails the workflow."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for every task; a task's own ``kwargs.env`` wins (dagq)."""
    notify: list[NotifySpec] = Field(default_factory=list)
    """Webhooks told when the run ends (dagq): ``{url, events, secret, format}`` each."""
    params: dict[str, ParamDeclaration] = Field(default_factory=dict)
    """Workflow parameters (dagq): name -> default, or ``{default, description, type}``; without a
    default the parameter is required. Set at submit (``--param NAME=VALUE``), used as
    ``{{ params.NAME }}`` in ``kwargs.cmd``, env values and ``cwd``, and in every task's
    environment as ``DAGQ_PARAM_<NAME>``."""

    @field_validator("params", mode="before")
    @classmethod
    def _check_params(cls, value: Any) -> Any:
        # One clear message per problem instead of pydantic's per-union-member errors.
        if not isinstance(value, dict):
            raise ValueError(f"params must be a mapping of name -> default, got {type_word(value)}")
        for key, declared in value.items():
            if isinstance(declared, dict):
                _check_param(key, "", f"params.{key}")
                _check_param_mapping(declared, f"params.{key}")
                continue
            _check_param(key, "" if declared is None else declared, f"params.{key}")
        return value


def _check_param_mapping(declared: dict[Any, Any], where: str) -> None:
    """A parameter written as a mapping: only ``default``, ``description`` and ``type``."""
    for key in declared:
        if key not in ParamSpec.model_fields:
            raise ValueError(
                f"{where}: unknown key {key!r} (a parameter has default, description and type)"
            )
    kind = declared.get("type")
    if kind is not None and kind not in ("string", "number", "bool"):
        raise ValueError(f"{where}.type must be string, number or bool, got {kind!r}")
    description = declared.get("description")
    if description is not None and not isinstance(description, str):
        raise ValueError(f"{where}.description must be text, got {type_word(description)}")
    if declared.get("default") is not None:
        _check_param("default", declared["default"], f"{where}.default")


PARAM_NAME_CHARS = "letters, digits and '_', not starting with a digit"


def _check_param(key: Any, value: Any, where: str) -> None:
    if not isinstance(key, str) or not key.isidentifier() or not key.isascii():
        raise ValueError(f"{where}: parameter names must be {PARAM_NAME_CHARS}, got {key!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not a usable parameter value")
    if not isinstance(value, str | int | float | bool):
        raise ValueError(
            f"{where}: parameter values must be strings, numbers or booleans,"
            f" got {type_word(value)}"
        )


def type_word(value: Any) -> str:
    """A user's word for a parsed YAML/JSON value's type."""
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
