"""Cost answers read from storage: one workflow's (its state blob), and a period's (the index rows
of the workflows created since then, newest first, at most ``limit`` states read)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TYPE_CHECKING, Literal

from shared.cost.model import workflow_cost
from shared.cost.prices import PriceTable
from shared.readback.workflow_reads import read_workflow
from shared.storage.machines import MachineLife
from shared.views.cost import CostGroup, CostReport, PoolMachines, WorkflowCost

if TYPE_CHECKING:
    from shared.storage.ports import Storage

READ_CONCURRENCY = 16
"""States read at once by a period's report."""
MAX_COST_TASKS = 200_000
"""Tasks (the index rows' totals) of the states one period's report decodes: the states are read
and decoded in the app's process, beside the coordinator; a period beyond it is reported in part
(``CostReport.partial``), newest workflows first."""


async def get_workflow_cost(
    storage: Storage, workflow_id: str, prices: PriceTable, now: float
) -> WorkflowCost:
    """``GET /api/workflows/{id}/cost``."""
    wf, state = await read_workflow(storage, workflow_id)
    return workflow_cost(wf, state, prices, now)


async def period_cost(
    storage: Storage,
    *,
    since: float,
    by: Literal["queue", "name"],
    prices: PriceTable,
    now: float,
    limit: int,
) -> CostReport:
    """``GET /api/cost``: the workflows created since ``since`` (at most ``limit``), grouped."""
    ids: list[str] = []
    token: str | None = None
    truncated, tasks, partial = False, 0, None
    while True:
        page = await storage.index.list(limit=min(limit, 100), continuation=token)
        fresh = [row for row in page.rows if row.created_at >= since]
        for row in fresh:
            if len(ids) >= limit:
                truncated = True
                break
            if tasks + row.total > MAX_COST_TASKS:
                truncated = True
                partial = (
                    f"counted the {len(ids):,} newest workflows ({tasks:,} tasks): the next would"
                    f" pass the {MAX_COST_TASKS:,}-task budget of one report; ask for a shorter"
                    " period for the rest"
                )
                break
            ids.append(row.workflow_id)
            tasks += row.total
        if truncated or page.next is None or len(fresh) < len(page.rows):
            break
        token = page.next
    slots = asyncio.Semaphore(READ_CONCURRENCY)

    async def one(workflow_id: str) -> WorkflowCost | None:
        async with slots:
            try:
                return await get_workflow_cost(storage, workflow_id, prices, now)
            except Exception:  # purged meanwhile, or unreadable: left out of the sums
                return None

    costs = [c for c in await asyncio.gather(*(one(i) for i in ids)) if c is not None]
    report = _report(costs, since=since, by=by, currency=prices.currency, truncated=truncated)
    pool = pool_machines(await storage.registry.machines(since, now), since, now, prices)
    return report.model_copy(
        update={
            "partial": partial,
            "pool": pool,
            "pool_vm_hours": sum(p.vm_hours for p in pool),
            "pool_gpu_hours": sum(p.gpu_hours for p in pool),
            "pool_cost": sum(p.estimated_cost or 0.0 for p in pool),
        }
    )


def pool_machines(
    lives: list[MachineLife], since: float, until: float, prices: PriceTable | None
) -> list[PoolMachines]:
    """The machines up in [``since``, ``until``], by VM size, most VM-hours first (priced by
    ``prices``; None: not priced)."""
    sizes: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for life in lives:
        hours = life.hours_within(since, until)
        row = sizes[life.vm_size]
        row[0] += 1
        row[1] += hours
        row[2] += hours * life.gpus
    out = []
    for size, (machines, hours, gpu_hours) in sizes.items():
        price = None if prices is None else prices.vm_hour(size)
        cost = None if price is None else hours * price
        out.append(PoolMachines(vm_size=size, machines=int(machines), vm_hours=hours,
                                gpu_hours=gpu_hours, estimated_cost=cost))  # fmt: skip
    return sorted(out, key=lambda p: (-p.vm_hours, p.vm_size))


def _report(
    costs: list[WorkflowCost],
    *,
    since: float,
    by: Literal["queue", "name"],
    currency: str,
    truncated: bool,
) -> CostReport:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 4)
    members: dict[str, set[str]] = defaultdict(set)
    for cost in costs:
        for task in cost.tasks:
            key = task.queue if by == "queue" else cost.name
            row = sums[key]
            row[0] += task.gpu_hours
            row[1] += task.cpu_hours
            row[2] += task.estimated_cost
            row[3] += task.cached_saved_hours
            members[key].add(cost.id)
        if by == "name":  # storage belongs to the workflow, not to a queue
            sums[cost.name][2] += cost.storage_cost
            members[cost.name].add(cost.id)
    groups = [
        CostGroup(
            key=key,
            workflows=len(members[key]),
            gpu_hours=v[0],
            cpu_hours=v[1],
            estimated_cost=v[2],
            cached_saved_hours=v[3],
        )
        for key, v in sorted(sums.items(), key=lambda kv: -kv[1][2])
    ]
    return CostReport(
        since=since,
        by=by,
        currency=currency,
        workflows=len(costs),
        truncated=truncated,
        gpu_hours=sum(c.gpu_hours for c in costs),
        cpu_hours=sum(c.cpu_hours for c in costs),
        estimated_cost=sum(c.estimated_cost for c in costs),
        cached_saved_hours=sum(c.cached_saved_hours for c in costs),
        groups=groups,
    )
