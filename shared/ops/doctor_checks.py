"""``dagq doctor``'s checks: each a small pure function from gathered facts to findings.

A finding says what is wrong, where (queue, workflow, worker, partition) and how to fix it.
Severity ``error`` and ``warning`` make the deployment unhealthy (``dagq doctor`` exits 1);
``info`` is shown but does not.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from shared.engine.state import to_ms
from shared.engine.sweep import presumed_lost
from shared.ops.doctor_facts import Facts, QueuedTask
from shared.ops.workers import seen_at, worker_status
from shared.states import WorkflowStatus
from shared.views import DoctorFinding

Check = Callable[[Facts], list[DoctorFinding]]


def _worker_command(facts: Facts, queue: str) -> str:
    return f"dagq-worker {queue} --prefix {facts.names.prefix}"


def _alive_queues(facts: Facts) -> set[str]:
    limit = facts.limits.worker_lost_after_s
    return {
        queue
        for worker in facts.workers
        if worker_status(worker, facts.now, limit) == "alive"
        for queue in worker.queues
    }


def _due(facts: Facts) -> list[QueuedTask]:
    # At the state's resolution (whole milliseconds, rounded): a task dispatched a fraction of a
    # millisecond before ``now`` can be stamped just after it.
    now_ms = to_ms(facts.now)
    return [task for task in facts.queued if to_ms(task.visible_at) <= now_ms]


def _some(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def unserved_queues(facts: Facts) -> list[DoctorFinding]:
    """Tasks are waiting on a queue that no live worker polls."""
    waiting = Counter(task.queue for task in _due(facts))
    served = _alive_queues(facts)
    return [
        DoctorFinding(
            check="unserved_queue",
            severity="error",
            subject=queue,
            title=f"{count} task(s) queued on queue {queue!r}, which no live worker polls",
            detail="they wait until a worker serving this queue starts (or fail after their"
            " queue_timeout_s)",
            fix=f"start a worker for it: {_worker_command(facts, queue)} (storage from"
            " DAGQ_STORAGE or --account; on Azure scale up the pool that serves it)",
        )
        for queue, count in sorted(waiting.items())
        if queue not in served
    ]


def lost_dispatches(facts: Facts) -> list[DoctorFinding]:
    """Queued tasks whose message is not on their queue (the coordinator's repair signal)."""
    limits = facts.limits
    lost: dict[str, list[QueuedTask]] = defaultdict(list)
    for task in facts.queued:
        empty = facts.queue_depths.get(task.queue, -1) == 0
        if presumed_lost(
            int(facts.now * 1000), int(task.visible_at * 1000), int(task.sent_at * 1000),
            empty, lost_after_s=limits.lost_dispatch_after_s,
            empty_grace_s=limits.empty_queue_repair_after_s,
        ):  # fmt: skip
            lost[task.queue].append(task)
    return [
        DoctorFinding(
            check="lost_dispatch",
            severity="error",
            subject=queue,
            title=f"{len(tasks)} queued task(s) on queue {queue!r} have no message on it",
            detail="lost dispatches: "
            + _some([f"{t.workflow_id}/{t.task}#{t.attempt}" for t in tasks]),
            fix="the coordinator's sweep re-sends them (the same attempt; workers run it once)"
            f" {limits.empty_queue_repair_after_s:g} s after their send; if this finding stays,"
            " the sweeps are not running (see sweep_overdue)",
        )
        for queue, tasks in sorted(lost.items())
    ]


def events_without_coordinator(facts: Facts) -> list[DoctorFinding]:
    """Events wait on a partition's queue and no coordinator holds its lease."""
    findings = []
    for p in facts.partitions:
        if p.lease_held or p.oldest_event_at is None:
            continue
        waited = facts.now - p.oldest_event_at
        if waited <= facts.limits.event_stuck_after_s:
            continue
        findings.append(
            DoctorFinding(
                check="events_without_coordinator",
                severity="error",
                subject=p.event_queue,
                title=f"{p.event_depth} event(s) wait on {p.event_queue} (the oldest"
                f" {waited:.0f} s) and no coordinator holds partition {p.partition}'s lease",
                detail="completions and control events are not being applied",
                fix="check that the Functions app runs (its queue trigger 'coordinator' and its"
                " logs); locally: make up, or python -m shared.coordinator",
            )
        )
    return findings


def sweeps_overdue(facts: Facts) -> list[DoctorFinding]:
    """A partition's sweeps have not run for a while (or never)."""
    findings = []
    for p in facts.partitions:
        limit = facts.limits.sweep_overdue_after_s
        if p.last_sweep is not None and facts.now - p.last_sweep <= limit:
            continue
        when = (
            "never ran"
            if p.last_sweep is None
            else f"last ran {facts.now - p.last_sweep:.0f} s ago"
        )
        findings.append(
            DoctorFinding(
                check="sweep_overdue",
                severity="error" if facts.active_total else "warning",
                subject=f"partition {p.partition}",
                title=f"the sweeps of partition {p.partition} {when}",
                detail="repairs wait: lost events and dispatches, timeouts, cancel-poll,"
                " poison-repair",
                fix="check the Functions app's timer trigger 'sweeps' (DAGQ_SWEEP_SCHEDULE) and"
                " its logs; locally: make up, or python -m shared.coordinator",
            )
        )
    return findings


def poison_messages(facts: Facts) -> list[DoctorFinding]:
    """Events the Functions host gave up on are waiting in a poison queue."""
    return [
        DoctorFinding(
            check="poison_messages",
            severity="warning",
            subject=p.poison_queue,
            title=f"{p.poison_depth} event(s) in the poison queue {p.poison_queue}",
            detail="the coordinator trigger failed on them repeatedly",
            fix="the sweep's poison-repair re-applies them (or dead-letters them with a reason);"
            " if they stay, the sweeps are not running (see sweep_overdue); the app's logs say"
            " why the trigger failed",
        )
        for p in facts.partitions
        if p.poison_depth > 0
    ]


def dead_letters(facts: Facts) -> list[DoctorFinding]:
    """Events (or task messages) were dead-lettered recently, each with its reason."""
    window = facts.limits.dead_letter_window_s
    recent = [d for d in facts.dead_letters if facts.now - d.received_at <= window]
    if not recent:
        return []
    reasons = Counter(d.reason for d in recent)
    detail = "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(5))
    return [
        DoctorFinding(
            check="dead_letters",
            severity="warning",
            subject=facts.names.deadletter_container,
            title=f"{len(recent)} message(s) dead-lettered in the last {window / 3600:g} h",
            detail=detail,
            fix=f"read them in the container {facts.names.deadletter_container}"
            " (YYYY-MM-DD/<id>.json, each with its reason), fix the cause, and send an event's"
            " text to the event queue again if it still matters; the lifecycle policy deletes"
            " them after deadletterRetentionDays",
        )
    ]


def clock_skew(facts: Facts) -> list[DoctorFinding]:
    """Live workers whose clock disagrees with the storage service's."""
    findings = []
    for worker in facts.workers:
        if worker.server_seen is None:
            continue
        if worker_status(worker, facts.now, facts.limits.worker_lost_after_s) != "alive":
            continue
        skew = worker.last_seen - worker.server_seen
        if abs(skew) <= facts.limits.clock_skew_s:
            continue
        findings.append(
            DoctorFinding(
                check="clock_skew",
                severity="warning",
                subject=worker.worker_id,
                title=f"worker {worker.worker_id}'s clock is {abs(skew):.0f} s"
                f" {'ahead of' if skew > 0 else 'behind'} storage's",
                detail="task start and finish times (and timeouts judged by them) come from"
                " worker clocks",
                fix=f"synchronise the clock of host {worker.host} (chrony or systemd-timesyncd)",
            )
        )
    return findings


def unknown_queues(facts: Facts) -> list[DoctorFinding]:
    """Definitions use a queue that no worker has ever polled (a typo, or a missing pool)."""
    users: dict[str, list[str]] = defaultdict(list)
    for wf in facts.workflows:
        for queue in wf.queues:
            if queue not in facts.known_queues:
                users[queue].append(wf.workflow_id)
    return [
        DoctorFinding(
            check="unknown_queue",
            severity="warning",
            subject=queue,
            title=f"queue {queue!r} is used by {len(ids)} workflow(s) but no worker ever polled it",
            detail="used by " + _some(ids),
            fix=f"check the queue name in the definition, or start a worker for it:"
            f" {_worker_command(facts, queue)}",
        )
        for queue, ids in sorted(users.items())
    ]


def lost_workers(facts: Facts) -> list[DoctorFinding]:
    """Workers that stopped without a clean stop (crashed, evicted, cut off)."""
    findings = []
    for worker in facts.workers:
        if worker_status(worker, facts.now, facts.limits.worker_lost_after_s) != "lost":
            continue
        running = f", running {len(worker.tasks)} task(s)" if worker.tasks else ""
        findings.append(
            DoctorFinding(
                check="lost_worker",
                severity="info",
                subject=worker.worker_id,
                title=f"worker {worker.worker_id} on {worker.host} not seen for"
                f" {facts.now - seen_at(worker):.0f} s{running}",
                detail="its tasks reappear on their queue when their visibility timeout ends,"
                " and another worker runs them",
                fix="nothing if it was removed on purpose (its record is forgotten after a week);"
                " otherwise check the host and the worker's logs",
            )
        )
    return findings


def stuck_pending(facts: Facts) -> list[DoctorFinding]:
    """Workflows still pending well after activate-repair should have activated them."""
    limit = 2 * facts.limits.activate_repair_after_s
    stuck = [
        wf.workflow_id
        for wf in facts.workflows
        if wf.status is WorkflowStatus.PENDING and facts.now - wf.created_at > limit
    ]
    if not stuck:
        return []
    return [
        DoctorFinding(
            check="stuck_pending",
            severity="error",
            subject=stuck[0] if len(stuck) == 1 else None,
            title=f"{len(stuck)} workflow(s) still pending {limit:g} s after submit",
            detail=_some(stuck),
            fix="the coordinator is not running (see events_without_coordinator and"
            " sweep_overdue); activate-repair starts them once it runs",
        )
    ]


def _failed_resource(facts: Facts, kind: str) -> str:
    """What a tolerated failure of ``kind`` failed to reach (``shared.storage.tolerated.Kind``)."""
    names = facts.names
    return {
        "cache look-up": f"read {names.cache_container}",
        "cache record": f"write {names.cache_container}",
        "index projection": f"write the index table {names.index_table}",
        "registry heartbeat": f"write the registry table {names.registry_table}",
        "log append": f"write logs in {names.outputs_container}",
        "cache expiry": f"delete expired entries in {names.cache_container}",
    }.get(kind, f"complete a {kind}")


def tolerated_failures(facts: Facts) -> list[DoctorFinding]:
    """Storage calls that failed and were tolerated (the run went on), recently: a permission
    missing on Azure shows here, not only in a log."""
    findings = []
    for note in facts.failures:
        ago = facts.now - note.at
        if ago > facts.limits.dead_letter_window_s:
            continue
        denied = note.detail.startswith("403")
        fix = (
            "grant the identity its role there (infra/modules/identity.bicep; docs/permissions.md"
            " lists every role and the calls that need it), then azd provision"
            if denied
            else "see the logs' 'tolerated storage failure' lines for each failure; it is"
            " retried, and running stays correct meanwhile"
        )
        findings.append(
            DoctorFinding(
                check="tolerated_failure",
                severity="error" if denied else "warning",
                subject=note.source,
                title=f"{note.source} cannot {_failed_resource(facts, note.kind)}: {note.detail}",
                detail=f"{note.count} {note.kind} failure(s) so far, the latest noted"
                f" {max(ago, 0):.0f} s ago; dagq ran on without it (a {note.kind} is best effort)",
                fix=fix,
            )
        )
    return findings


def partial_view(facts: Facts) -> list[DoctorFinding]:
    """What the run's budgets left unexamined: the other checks saw only the rest."""
    return [
        DoctorFinding(
            check="partial",
            severity="info",
            subject=None,
            title="this run looked at part of the deployment only",
            detail=note,
            fix="ask about one workflow (dagq doctor WORKFLOW_ID) to examine it whatever the"
            " budgets",
        )
        for note in facts.partial
    ]


CHECKS: tuple[Check, ...] = (
    unserved_queues,
    lost_dispatches,
    events_without_coordinator,
    sweeps_overdue,
    stuck_pending,
    poison_messages,
    dead_letters,
    clock_skew,
    unknown_queues,
    lost_workers,
    tolerated_failures,
    partial_view,
)
"""Every check, in the order findings are listed."""


def diagnose(facts: Facts) -> list[DoctorFinding]:
    """Every finding of every check."""
    return [finding for check in CHECKS for finding in check(facts)]
