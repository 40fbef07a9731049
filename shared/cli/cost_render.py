"""How ``dagq cost`` shows a run's or a period's cost (rich renderables)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from shared.cli.fit_table import Column, FitTable, Phrases
from shared.cli.params_render import params_line
from shared.cli.style import duration
from shared.views import CostReport, WorkflowCost

TASK_COLUMNS = (
    Column("task", "name", floor=20),
    Column("queue", "name", drop=4, floor=8),
    Column("gpus", right=True, drop=3),
    Column("tries", right=True, drop=2),
    Column("ran", right=True),
    Column("waited", right=True, drop=1),
    Column("gpu-h", right=True),
    Column("cpu-h", right=True, drop=5),
    Column("cost", right=True),
)
"""The columns of a run's cost per task (the cost and what it is made of stay longest)."""
GROUP_COLUMNS = (
    Column("workflows", right=True),
    Column("gpu-h", right=True),
    Column("cpu-h", right=True, drop=1),
    Column("cost", right=True),
    Column("saved-h", right=True, drop=2),
)


def money(amount: float, currency: str) -> str:
    """``12.3456`` -> ``12.3456 USD``: one precision for every amount (the dashboard's too), fine
    enough for a run's storage cost (``0.0012 USD``) beside its compute."""
    return f"{amount:.4f} {currency}"


def render(view: WorkflowCost | CostReport) -> RenderableType:
    """The view as text and a table."""
    return workflow_view(view) if isinstance(view, WorkflowCost) else period_view(view)


def workflow_view(cost: WorkflowCost) -> RenderableType:
    c = cost.currency
    # Each phrase stays on one line, so an amount keeps its unit.
    saved = f"cache saved {cost.cached_saved_hours:.3f} h ({money(cost.cached_saved_cost, c)})"
    params = params_line(cost.params)
    head = Group(
        Phrases(Text(cost.id, "bold"), cost.name),
        *([params] if params is not None else []),
        Phrases(
            f"GPU-hours {cost.gpu_hours:.3f}",
            f"CPU-hours {cost.cpu_hours:.3f}",
            f"queue wait {cost.queue_wait_hours:.3f} h",
        ),
        Phrases(
            Text.assemble("estimated cost ", (money(cost.estimated_cost, c), "bold")),
            f"(compute {money(cost.compute_cost, c)},",
            f"storage {money(cost.storage_cost, c)}",
            f"for ~{cost.storage_requests:,.0f} requests)",
            sep=" ",
        ),
        Phrases(saved),
    )
    table = FitTable(TASK_COLUMNS)
    for t in cost.tasks:
        ran = "cached" if t.cached_from is not None else duration(t.run_s)
        table.add_row(
            t.name, t.queue, str(t.gpus), str(t.attempts), ran, duration(t.wait_s),
            f"{t.gpu_hours:.3f}", f"{t.cpu_hours:.3f}", money(t.estimated_cost, c),
        )  # fmt: skip
    return Group(head, table)


def period_view(report: CostReport) -> RenderableType:
    c = report.currency
    more = " (more were created: the newest are counted)" if report.truncated else ""
    if report.partial:
        more = f" ({report.partial})"
    head = Group(
        Phrases(f"{report.workflows} workflow(s){more}"),
        Phrases(
            f"GPU-hours {report.gpu_hours:.3f}", f"CPU-hours {report.cpu_hours:.3f}",
            Text.assemble("estimated cost ", (money(report.estimated_cost, c), "bold")),
            f"cache saved {report.cached_saved_hours:.3f} h",
        ),
    )  # fmt: skip
    table = FitTable([Column(report.by, "name", floor=20), *GROUP_COLUMNS])
    for g in report.groups:
        table.add_row(
            g.key, str(g.workflows), f"{g.gpu_hours:.3f}", f"{g.cpu_hours:.3f}",
            money(g.estimated_cost, c), f"{g.cached_saved_hours:.3f}",
        )  # fmt: skip
    return Group(head, table, *pool_view(report))


def pool_view(report: CostReport) -> list[RenderableType]:
    """The worker machines up in the period, by VM size: what the pool paid for (boot and idle
    tail included) beside what the tasks used."""
    if not report.pool:
        return [Phrases("pool: no worker machine was up in the period")]
    lines: list[RenderableType] = []
    for p in report.pool:
        cost = (
            "not priced" if p.estimated_cost is None else money(p.estimated_cost, report.currency)
        )
        size = p.vm_size or "(size not told)"
        hours = f"VM-hours {p.vm_hours:.3f}", f"GPU-hours {p.gpu_hours:.3f}"
        lines.append(Phrases(f"pool {size}:", f"{p.machines} machine(s)", *hours, cost))
    if report.pool_gpu_hours > 0:
        used = min(1.0, report.gpu_hours / report.pool_gpu_hours)
        lines.append(
            Phrases(
                f"tasks used {used:.0%} of the pool's {report.pool_gpu_hours:.3f} GPU-hours",
                f"(pool cost {money(report.pool_cost, report.currency)})",
            )
        )
    return lines
