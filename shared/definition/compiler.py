"""Definition text -> validated, expanded ``CompiledWorkflow``, reporting every problem at once.

Two steps, each raising ``shared.errors.DefinitionError`` with all the issues it found:

1. ``parse_definition`` (``shared.definition.parsing``): text -> ``WorkflowSpec`` (UTF-8, YAML/JSON
syntax,
   keys, types).
2. ``compile_workflow``: ``WorkflowSpec`` -> ``CompiledWorkflow`` (names, foreach expansion and
   templates, queues, env, dependencies, dep_policy, conditions, cycles, limits).

Every check is linear in the size of the definition: the API runs this on each submit.

The steps of ``compile_workflow`` live by job in ``shared.definition.compilation`` (limits,
issues,
tables), ``shared.definition.passes.values``, ``shared.definition.passes.expansion``,
``shared.definition.passes.dependencies`` and ``shared.definition.passes.foreach_from``; this
module puts them
together and keeps the public names.
"""

from __future__ import annotations

from shared.definition.compilation import Written
from shared.definition.gc_pause import paused_gc
from shared.definition.parsing import Format, parse_definition, parse_for_validation
from shared.definition.passes.dependencies import DependencyResolution
from shared.definition.passes.expansion import TaskExpansion
from shared.definition.passes.foreach_from import ForeachFromChecks
from shared.definition.spec import RetrySpec, WorkflowSpec
from shared.definition.workflow import CompiledWorkflow, RetryPolicy, TaskDef
from shared.errors import DefinitionError
from shared.limits import (
    MAX_CMD_BYTES,
    MAX_CWD_CHARS,
    MAX_DEFINITION_BYTES,
    MAX_DEPENDENCIES,
    MAX_EDGES,
    MAX_ENV_BYTES,
    MAX_EXPANDED_BYTES,
    MAX_EXPANSIONS,
    MAX_TASKS,
    MAX_WORKFLOW_NAME,
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
    "compile_text",
    "compile_workflow",
    "parse_definition",
]
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


def compile_text(
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


class _Compiler(TaskExpansion, DependencyResolution, ForeachFromChecks):
    """One compilation: expand, resolve, check, then build the ``TaskDef``s."""

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

    # -- output ----------------------------------------------------------------------------
    def task_defs(self, w: Written) -> list[TaskDef]:
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
