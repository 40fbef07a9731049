"""How ``dagq cost`` shows a run's or a period's cost (rich renderables)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from shared.cli.render import duration
from shared.views import CostReport, WorkflowCost


def money(amount: float, currency: str) -> str:
    """``12.3456`` -> ``12.35 USD`` (cents below 1, ``0.0012 USD``, shown as such)."""
    return f"{amount:.2f} {currency}" if amount >= 1 or amount == 0 else f"{amount:.4f} {currency}"


def render(view: WorkflowCost | CostReport) -> RenderableType:
    """The view as text and a table."""
    return workflow_view(view) if isinstance(view, WorkflowCost) else period_view(view)


def workflow_view(cost: WorkflowCost) -> RenderableType:
    c = cost.currency
    head = Text.assemble(
        (f"{cost.id}", "bold"), f"  {cost.name}\n",
        f"GPU-hours {cost.gpu_hours:.3f}  CPU-hours {cost.cpu_hours:.3f}  "
        f"queue wait {cost.queue_wait_hours:.3f} h\n",
        "estimated cost ", (money(cost.estimated_cost, c), "bold"),
        f" (compute {money(cost.compute_cost, c)}, storage {money(cost.storage_cost, c)} for"
        f" ~{cost.storage_requests:,.0f} requests)\n",
        f"cache saved {cost.cached_saved_hours:.3f} h ({money(cost.cached_saved_cost, c)})",
    )  # fmt: skip
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
    for column in ("task", "queue", "gpus", "tries", "ran", "waited", "gpu-h", "cpu-h", "cost"):
        table.add_column(column, justify="left" if column in ("task", "queue") else "right")
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
    head = Text.assemble(
        f"{report.workflows} workflow(s){more}\n",
        f"GPU-hours {report.gpu_hours:.3f}  CPU-hours {report.cpu_hours:.3f}  estimated cost ",
        (money(report.estimated_cost, c), "bold"),
        f"  cache saved {report.cached_saved_hours:.3f} h",
    )
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
    for column in (report.by, "workflows", "gpu-h", "cpu-h", "cost", "saved-h"):
        table.add_column(column, justify="left" if column == report.by else "right")
    for g in report.groups:
        table.add_row(
            g.key, str(g.workflows), f"{g.gpu_hours:.3f}", f"{g.cpu_hours:.3f}",
            money(g.estimated_cost, c), f"{g.cached_saved_hours:.3f}",
        )  # fmt: skip
    return Group(head, table)
