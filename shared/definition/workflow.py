"""The compiled workflow: a validated, foreach-expanded, immutable DAG in index form.

This is what the engine runs and what the definition blob stores. Tasks are numbered in definition
order (expansions of a ``foreach`` task take consecutive numbers in their declared order), and every
cross-reference is an index, so the engine's per-event work touches only the task and its children.

Built by ``shared.definition.compiler.compile_workflow`` from a parsed
``shared.definition.spec.WorkflowSpec``; stored in
the definition blob by ``shared.codec.encode_definition``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

DEFAULT_CACHE_TTL_S = 30 * 86400.0
"""How long a cache entry may be reused when the task's ``cache`` gives no ``ttl``."""

DepPolicy = Literal["all", "any", "all_settled"] | int
"""``all``: every parent succeeded (completed or skipped). ``any``: at least one succeeded.
``all_settled``: every parent is terminal and at least one succeeded. ``N``: at least N
succeeded."""

ResultPolicy = Literal["all_sinks_succeed", "all_tasks_succeed"]

# -- notifications (issue 29: ``notify:``; shared.definition.passes.notify checks them) --------

NotifyEvent = Literal["completed", "failed", "cancelled", "task_failed"]
NotifyFormat = Literal["json", "slack", "teams"]
NOTIFY_EVENTS: tuple[NotifyEvent, ...] = ("completed", "failed", "cancelled", "task_failed")
DEFAULT_NOTIFY_EVENTS: tuple[NotifyEvent, ...] = ("completed", "failed", "cancelled")
"""The events of a webhook that names none (and of every ``--notify URL``)."""


@dataclass(frozen=True, slots=True)
class NotifyTarget:
    """A webhook told when the workflow ends (and, with ``task_failed``, when a task fails for
    good): delivered from the notify queue by ``shared.notify``, never by the coordinator."""

    url: str
    events: tuple[NotifyEvent, ...] = DEFAULT_NOTIFY_EVENTS
    secret: str | None = None
    """The HMAC-SHA256 key of the ``X-Dagq-Signature`` header (None: unsigned)."""
    format: NotifyFormat = "json"
    """The body: dagq's JSON, or a Slack or Teams incoming webhook's payload."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how soon a failed attempt is retried (``num_retries`` is the budget)."""

    initial_delay_s: float = 0.0
    """Delay before the first retry (0: at once, as in ai4s-jobq)."""
    multiplier: float = 2.0
    """Each further retry waits this many times longer."""
    max_delay_s: float = 3600.0
    """Upper bound of any one delay."""
    jitter: float = 0.0
    """Fraction (0-1) of the delay randomised, deterministically per (workflow, task, attempt)."""
    retry_on_exit_codes: tuple[int, ...] | None = None
    """Exit codes worth retrying; None retries every failure. Timeouts and worker errors are
    always retryable; cancellations never are."""


@dataclass(frozen=True, slots=True)
class ExpandFrom:
    """A dynamic fan-out (``foreach_from``): the task stands for one task per item of a list in a
    parent's output, made when that parent completes (``shared.engine.expansion``)."""

    source: int
    """Task number of the parent whose output holds the list."""
    path: tuple[str, ...]
    """Keys (or list indexes, as digits) from the output to the list; empty: the output itself."""
    max_width: int
    """Most items the list may have (a longer list fails the task)."""

    @property
    def spelled(self) -> str:
        """The path as the user wrote it, without the parent: ``.shards`` (or empty)."""
        return "".join(f".{key}" for key in self.path)


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """A cached task's options (``cache:`` in the definition, plus the submit's overrides)."""

    version: str = ""
    """Part of the cache key (``shared.caching.key``)."""
    ttl_s: float = DEFAULT_CACHE_TTL_S
    """How long an entry this task records may be reused."""
    refresh: bool = False
    """Do not look up (``dagq submit --refresh TASK``): run, and replace the entry."""


@dataclass(frozen=True, slots=True)
class TaskDef:
    """One task of a compiled workflow."""

    name: str
    cmd: str
    queue: str
    env: dict[str, str] = field(default_factory=dict)
    """Workflow-level env merged under the task's own."""
    cwd: str | None = None
    parents: tuple[int, ...] = ()
    dep_policy: DepPolicy = "all"
    timeout_s: float | None = None
    """Per-attempt run time limit (the task's, else the workflow's default_task_timeout_s)."""
    queue_timeout_s: float | None = None
    """How long an attempt may wait for a worker before it fails as not started."""
    num_retries: int = 0
    retry: RetryPolicy = RetryPolicy()
    condition: str | None = None
    group: str | None = None
    """The foreach task this one was expanded from (its name as written), if any."""
    params: dict[str, Any] | None = None
    """The foreach parameters of this expansion, if any."""
    expand: ExpandFrom | None = None
    """Set on a ``foreach_from`` task: it never runs itself, it expands when its list is known
    (its ``cmd`` and ``env`` are then templates of ``{{ item }}`` / ``{{ item.<key> }}``)."""
    cache: CachePolicy | None = None
    """Result caching (None: never looked up, never recorded)."""
    gpus: int | None = None
    """GPUs one attempt uses, as the definition says (None: the queue's price-table figure)."""


@dataclass(frozen=True)
class CompiledWorkflow:
    """A validated DAG ready to run. Immutable; shared freely between threads and passes."""

    name: str
    tasks: tuple[TaskDef, ...]
    max_parallelism: int | None = None
    result_policy: ResultPolicy = "all_sinks_succeed"
    index: dict[str, int] = field(default_factory=dict)
    """Task name -> task number."""
    children: tuple[tuple[int, ...], ...] = ()
    """Task number -> numbers of the tasks that depend on it."""
    source: str | None = None
    """The definition as submitted (YAML or JSON text), kept for display; never parsed again."""
    notify: tuple[NotifyTarget, ...] = ()
    """The webhooks told of the run's end: ``notify:`` and the submit's ``--notify URL``."""
    params: dict[str, Any] = field(default_factory=dict)
    """The workflow parameters of this run, name -> value (a string, number or bool): the
    defaults of ``params:`` and the values given at submit. Already filled into the tasks'
    ``{{ params.NAME }}`` (but for a ``foreach_from`` task's cmd and env, which the engine fills
    as it expands); each task also gets them as ``DAGQ_PARAM_<NAME>`` (the task message)."""

    @classmethod
    def of(
        cls,
        name: str,
        tasks: tuple[TaskDef, ...] | list[TaskDef],
        *,
        max_parallelism: int | None = None,
        result_policy: ResultPolicy = "all_sinks_succeed",
        source: str | None = None,
        notify: tuple[NotifyTarget, ...] = (),
        params: dict[str, Any] | None = None,
    ) -> CompiledWorkflow:
        """Build from task definitions whose ``parents`` are already indices, deriving ``index``
        and ``children``. No validation: ``shared.definition.compiler`` validates before it calls
        this."""
        tasks = tuple(tasks)
        kids: list[list[int]] = [[] for _ in tasks]
        for child, task in enumerate(tasks):
            for parent in task.parents:
                kids[parent].append(child)
        return cls(
            name=name,
            tasks=tasks,
            max_parallelism=max_parallelism,
            result_policy=result_policy,
            index={t.name: i for i, t in enumerate(tasks)},
            children=tuple(tuple(k) for k in kids),
            source=source,
            notify=notify,
            params=params or {},
        )

    @cached_property
    def list_sources(self) -> frozenset[int]:
        """Task numbers of the tasks whose output feeds a ``foreach_from``."""
        return frozenset(t.expand.source for t in self.tasks if t.expand is not None)

    @property
    def roots(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.tasks) if not t.parents)

    @property
    def sinks(self) -> tuple[int, ...]:
        return tuple(i for i, kids in enumerate(self.children) if not kids)

    @property
    def queues(self) -> tuple[str, ...]:
        """Distinct queue names, in first-use order."""
        return tuple(dict.fromkeys(t.queue for t in self.tasks))
