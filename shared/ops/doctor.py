"""``GET /api/doctor[?id=ID]``: gather the facts once, run every check, report.

The checks run server-side (``doctor_checks``), so ``dagq doctor`` needs only the API's URL and
key, never storage credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.ops.doctor_checks import diagnose
from shared.ops.doctor_facts import Facts, gather
from shared.ops.workers import worker_status
from shared.views import DoctorReport, DoctorSummary

if TYPE_CHECKING:
    from shared.settings import Settings
    from shared.storage.ports import Storage

UNHEALTHY = frozenset({"error", "warning"})


def summarize(facts: Facts) -> DoctorSummary:
    """What a doctor run looked at."""
    limit = facts.limits.worker_lost_after_s
    alive = sum(worker_status(w, facts.now, limit) == "alive" for w in facts.workers)
    status = None
    if facts.workflow_id is not None and facts.workflows:
        status = str(facts.workflows[0].status)
    return DoctorSummary(
        workers_alive=alive,
        workers_lost=len(facts.workers) - alive,
        active_workflows=facts.active_total,
        examined_workflows=len(facts.workflows),
        queued_tasks=len(facts.queued),
        queue_depths=facts.queue_depths,
        partitions=len(facts.partitions),
        workflow_status=status,
    )


def report(facts: Facts) -> DoctorReport:
    """The report of one set of facts (pure)."""
    findings = diagnose(facts)
    return DoctorReport(
        healthy=not any(f.severity in UNHEALTHY for f in findings),
        checked_at=facts.now,
        workflow_id=facts.workflow_id,
        findings=findings,
        summary=summarize(facts),
    )


async def doctor(
    storage: Storage, settings: Settings, *, now: float, workflow_id: str | None = None
) -> DoctorReport:
    """Check the deployment (and, with ``workflow_id``, that workflow: NotFoundError if unknown)."""
    return report(await gather(storage, settings, now=now, workflow_id=workflow_id))
