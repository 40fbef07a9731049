"""A workflow's cost from its definition and state: per attempt, run time x GPUs (or slots) x the
price of its queue, and its queue wait; per task and per workflow, the sums; plus the estimated
storage requests and what the result cache saved. Pure: the caller passes ``now`` (a running
attempt counts until then)."""

from __future__ import annotations

from collections.abc import Iterator

from shared.cost.prices import PriceTable
from shared.cost.requests import estimate_requests
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.state import RuntimeState
from shared.views.cost import TaskCost, WorkflowCost
from shared.views.workflows import CachedFromView

HOUR = 3600.0


def _spans(state: RuntimeState, i: int, now_ms: int) -> Iterator[tuple[float, float]]:
    """(run seconds, wait seconds) of each attempt of task ``i`` that started."""
    history = state.history.get(i, [])
    current = [(state.queued_ms[i], state.started_ms[i], state.finished_ms[i])]
    if i in state.cached:
        current = []  # completed from the cache: nothing ran
    for queued, started, finished in [
        (p.queued_ms, p.started_ms, p.finished_ms) for p in history
    ] + current:
        if started is None:
            continue
        end = finished if finished is not None else now_ms
        wait = started - queued if queued is not None and queued <= started else 0
        yield max(0, end - started) / 1000.0, wait / 1000.0


def task_cost(
    task: TaskDef, state: RuntimeState, i: int, prices: PriceTable, now_ms: int
) -> TaskCost:
    """One task's cost."""
    price = prices.of(task.queue)
    gpus = task.gpus if task.gpus is not None else price.gpus
    spans = list(_spans(state, i, now_ms))
    run_h = sum(run for run, _ in spans) / HOUR
    hourly = gpus * price.gpu_hour if gpus else price.slot_hour
    origin = state.cached.get(i)
    cost = TaskCost(
        name=task.name,
        queue=task.queue,
        gpus=gpus,
        attempts=len(spans),
        run_s=run_h * HOUR,
        wait_s=sum(wait for _, wait in spans),
        gpu_hours=run_h * gpus,
        cpu_hours=0.0 if gpus else run_h,
        estimated_cost=run_h * hourly,
    )
    if origin is None:
        return cost
    return cost.model_copy(
        update={
            "cached_from": CachedFromView(**origin.model_dump()),
            "cached_saved_hours": origin.run_s / HOUR * max(gpus, 1),
            "cached_saved_cost": origin.run_s / HOUR * hourly,
        }
    )


def workflow_cost(
    wf: CompiledWorkflow, state: RuntimeState, prices: PriceTable, now: float
) -> WorkflowCost:
    """The cost of one workflow run (``wf``: the workflow as it runs, expansions included)."""
    now_ms = round(now * 1000)
    tasks = [task_cost(t, state, i, prices, now_ms) for i, t in enumerate(wf.tasks)]
    estimate = estimate_requests(
        attempts=sum(t.attempts for t in tasks),
        run_s=sum(t.run_s for t in tasks),
        cache_hits=len(state.cached),
    )
    compute = sum(t.estimated_cost for t in tasks)
    storage = estimate.requests / 10_000 * prices.storage.per_10k_requests
    return WorkflowCost(
        id=state.workflow_id,
        name=wf.name,
        currency=prices.currency,
        gpu_hours=sum(t.gpu_hours for t in tasks),
        cpu_hours=sum(t.cpu_hours for t in tasks),
        queue_wait_hours=sum(t.wait_s for t in tasks) / HOUR,
        compute_cost=compute,
        storage_requests=estimate.requests,
        storage_cost=storage,
        estimated_cost=compute + storage,
        cached_saved_hours=sum(t.cached_saved_hours for t in tasks),
        cached_saved_cost=sum(t.cached_saved_cost for t in tasks),
        tasks=tasks,
        params=wf.params,
    )
