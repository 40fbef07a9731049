"""How the operations commands show their results: the workers table, doctor's findings, purge.

Pure functions from client results to rich renderables, tested without an API.
"""

from __future__ import annotations

from rich.text import Text

from shared.cli.cost_render import money
from shared.cli.fit_table import Column, FitTable
from shared.cli.live_render import gpu_text, progress_text
from shared.cli.style import duration
from shared.durations import spell_duration
from shared.views import DoctorReport, WorkersView, WorkerView

WORKER_STATUS_STYLE = {"alive": "green", "lost": "bold red"}


def _doing(worker: WorkerView, limit: int = 3) -> str:
    shown = []
    for t in worker.tasks[:limit]:
        progress = progress_text(t.progress, t.metrics)
        shown.append(f"{t.workflow_id}/{t.task}#{t.attempt}" + (f" {progress}" if progress else ""))
    if len(worker.tasks) > limit:
        shown.append(f"+{len(worker.tasks) - limit} more")
    return ", ".join(shown) or "-"


WORKER_COLUMNS = (
    Column("worker", "name", floor=24),
    Column("status"),
    Column("queues", "words", drop=3),
    Column("busy", right=True),
    Column("seen", right=True, drop=2),
    Column("up", right=True, drop=4),
    Column("version", drop=5),
)


def pool_text(view: WorkersView) -> str:
    """The machines up in the view's window, by VM size: what the pool paid for (boot and idle
    tail included), which ``dagq cost --since`` sets beside the tasks' GPU-hours."""
    parts = []
    for p in view.pool:
        cost = "" if p.estimated_cost is None else f", {money(p.estimated_cost, view.currency)}"
        size = p.vm_size or "(size not told)"
        parts.append(f"{size} x{p.machines}: {p.vm_hours:.2f} VM-hours{cost}")
    window = spell_duration(view.pool_window_s)
    return f"machines up in the last {window}: " + ("; ".join(parts) or "none")


GPU_COLUMN = Column("gpus (use, memory)", "words", drop=1)
RUNNING_COLUMN = Column("running", "words")


def workers_table(view: WorkersView, now: float) -> FitTable:
    """The table of ``dagq workers``: alive first, then lost."""
    show_gpus = any(w.gpus for w in view.workers)
    table = FitTable([*WORKER_COLUMNS, *([GPU_COLUMN] if show_gpus else []), RUNNING_COLUMN])
    for worker in view.workers:
        table.add_row(
            worker.worker_id,
            Text(worker.status, style=WORKER_STATUS_STYLE.get(worker.status, "")),
            " ".join(worker.queues),
            f"{worker.busy_slots}/{worker.slots}",
            duration(now - worker.last_seen) + " ago",
            duration(now - worker.started_at),
            worker.version,
            *([gpu_text(worker.gpus)] if show_gpus else []),
            _doing(worker),
        )
    return table


SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def doctor_text(report: DoctorReport, api_url: str) -> Text:
    """The report of ``dagq doctor``: a summary line, then each finding with its fix."""
    s = report.summary
    text = Text()
    scope = (
        f" and workflow {report.workflow_id} ({s.workflow_status})" if report.workflow_id else ""
    )
    text.append(f"checked {api_url}{scope}: ", style="bold")
    text.append(
        f"{s.workers_alive} worker(s) alive, {s.workers_lost} lost; {s.active_workflows} active"
        f" workflow(s), {s.queued_tasks} queued task(s); {s.partitions} partition(s)\n"
    )
    if not report.findings:
        text.append("healthy: no problem found\n", style="bold green")
        return text
    for finding in report.findings:
        text.append(f"{finding.severity:<7} ", style=SEVERITY_STYLE.get(finding.severity, ""))
        text.append(f"[{finding.check}] ", style="dim")
        text.append(finding.title + "\n", style="bold")
        text.append(f"        {finding.detail}\n")
        text.append("    fix: ", style="green")
        text.append(finding.fix + "\n")
    verdict = "healthy (notes only)" if report.healthy else "unhealthy"
    text.append(f"{len(report.findings)} finding(s): {verdict}\n", style="bold")
    return text
