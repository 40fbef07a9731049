"""Pass 9, build: with no issue found, the final tasks -> the ``TaskDef``s of a
``CompiledWorkflow``; otherwise ``DefinitionError`` with every issue."""

from __future__ import annotations

from shared.definition.compilation import Compilation, Written
from shared.definition.passes.cache import cache_policy
from shared.definition.passes.notify import notify_targets
from shared.definition.spec import RetrySpec
from shared.definition.workflow import CompiledWorkflow, RetryPolicy, TaskDef

_DEFAULT_RETRY = RetryPolicy()


def build_workflow(c: Compilation) -> CompiledWorkflow:
    """The compiled workflow; raises ``DefinitionError`` when any pass reported an issue."""
    if c.issues:
        raise c.stop()
    spec = c.spec
    notify = notify_targets(c)  # checked by pass 8: adds no issue now
    return CompiledWorkflow.of(
        spec.name,
        [task for w in c.written for task in _task_defs(c, w)],
        max_parallelism=spec.max_parallelism,
        result_policy=spec.result_policy,
        source=c.options.source_text,
        notify=notify,
        params=c.param_values,
    )


def _task_defs(c: Compilation, w: Written) -> list[TaskDef]:
    task, spec = w.spec, c.spec
    parents = tuple(w.deps)
    retry = _retry_policy(task.retry)
    timeout = task.timeout_s if task.timeout_s is not None else spec.default_task_timeout_s
    group = task.name if task.foreach is not None else None
    policy = cache_policy(c, w)
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
            cache=policy,
            gpus=task.gpus,
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
