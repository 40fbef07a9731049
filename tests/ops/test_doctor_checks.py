"""Each doctor check, a pure function of gathered facts, on hand-made facts."""

from __future__ import annotations

import dataclasses
from typing import Any

from shared.names import ResourceNames
from shared.ops import doctor_checks as checks
from shared.ops.doctor import report
from shared.ops.doctor_facts import Facts, PartitionFacts, QueuedTask, WorkflowFacts
from shared.states import WorkflowStatus
from shared.storage.ports import DeadLetter
from tests.ops.facts import LIMITS, NOW, worker


def partition(**kw: Any) -> PartitionFacts:
    base: dict[str, Any] = {
        "partition": 0, "event_queue": "d-events", "event_depth": 0, "oldest_event_at": None,
        "poison_queue": "d-events-poison", "poison_depth": 0, "lease_held": False,
        "last_sweep": NOW - 3,
    }  # fmt: skip
    return PartitionFacts(**{**base, **kw})


def queued(task: str = "a", queue: str = "cpu", sent_ago: float = 120.0) -> QueuedTask:
    return QueuedTask("wf1", task, queue, 1, sent_at=NOW - sent_ago, visible_at=NOW - sent_ago)


def running(queues: tuple[str, ...] = ("cpu",), **kw: Any) -> WorkflowFacts:
    base: dict[str, Any] = {
        "workflow_id": "wf1", "name": "demo", "status": WorkflowStatus.RUNNING,
        "created_at": NOW - 300, "queues": list(queues),
    }  # fmt: skip
    return WorkflowFacts(**{**base, **kw})


def healthy(**changes: Any) -> Facts:
    """A deployment with one live cpu worker, one running workflow, everything in order."""
    base = Facts(
        now=NOW,
        limits=LIMITS,
        names=ResourceNames("dq"),
        workers=[worker()],
        known_queues={"cpu": NOW - 600},
        queue_depths={"cpu": 1},
        workflows=[running()],
        queued=[queued()],
        partitions=[partition()],
        active_total=1,
    )
    return dataclasses.replace(base, **changes)


def found(facts: Facts) -> list[tuple[str, str | None]]:
    return [(f.check, f.subject) for f in checks.diagnose(facts)]


def test_a_healthy_deployment_has_no_findings() -> None:
    assert found(healthy()) == []
    assert report(healthy()).healthy is True


def test_tasks_on_a_queue_no_live_worker_polls() -> None:
    facts = healthy(workers=[worker(last_seen=NOW - 500, server_seen=NOW - 500)])
    [finding] = checks.unserved_queues(facts)
    assert finding.subject == "cpu"
    assert "dagq-worker cpu --prefix dq" in finding.fix
    assert checks.unserved_queues(healthy(workers=[worker(queues=("gpu", "cpu"))])) == []
    # A delayed retry not yet visible is not waiting for anyone.
    later = dataclasses.replace(queued(), visible_at=NOW + 100)
    assert checks.unserved_queues(healthy(workers=[], queued=[later])) == []


def test_a_task_dispatched_just_before_the_check_is_due() -> None:
    # State timestamps are rounded to the millisecond: dispatched at +0.6 ms, the state says
    # +1 ms. A doctor run at +0.7 ms must still count the task as waiting (it did not, which made
    # tests/ops/test_doctor_gather.py flaky).
    dispatched_at = NOW + 0.0006
    visible_at = round(dispatched_at * 1000) / 1000
    task = QueuedTask("wf1", "a", "cpu", 1, sent_at=visible_at, visible_at=visible_at)
    facts = healthy(workers=[], queued=[task], now=NOW + 0.0007)
    [finding] = checks.unserved_queues(facts)
    assert finding.subject == "cpu"


def test_lost_dispatch_needs_an_empty_queue_and_the_grace() -> None:
    [finding] = checks.lost_dispatches(healthy(queue_depths={"cpu": 0}))
    assert (finding.check, finding.subject) == ("lost_dispatch", "cpu")
    assert "wf1/a#1" in finding.detail
    assert checks.lost_dispatches(healthy()) == []  # its message may be the one on the queue
    fresh = healthy(queue_depths={"cpu": 0}, queued=[queued(sent_ago=10)])
    assert checks.lost_dispatches(fresh) == []  # a worker may be reporting it right now
    unknown = healthy(queue_depths={}, queued=[queued()])
    assert checks.lost_dispatches(unknown) == []  # a depth we could not read is not empty


def test_events_waiting_without_a_coordinator() -> None:
    stuck = partition(event_depth=3, oldest_event_at=NOW - 120)
    [finding] = checks.events_without_coordinator(healthy(partitions=[stuck]))
    assert finding.subject == "d-events"
    assert "3 event(s)" in finding.title
    held = dataclasses.replace(stuck, lease_held=True)
    assert checks.events_without_coordinator(healthy(partitions=[held])) == []
    young = dataclasses.replace(stuck, oldest_event_at=NOW - 5)
    assert checks.events_without_coordinator(healthy(partitions=[young])) == []


def test_overdue_or_missing_sweeps() -> None:
    late = healthy(partitions=[partition(last_sweep=NOW - 900), partition(partition=1)])
    [finding] = checks.sweeps_overdue(late)
    assert finding.subject == "partition 0"
    assert finding.severity == "error"
    [never] = checks.sweeps_overdue(healthy(partitions=[partition(last_sweep=None)]))
    assert "never ran" in never.title
    idle = healthy(partitions=[partition(last_sweep=None)], active_total=0)
    assert [f.severity for f in checks.sweeps_overdue(idle)] == ["warning"]


def test_poison_and_recent_dead_letters_with_their_reasons() -> None:
    [poison] = checks.poison_messages(healthy(partitions=[partition(poison_depth=2)]))
    assert poison.subject == "d-events-poison"
    letters = [
        DeadLetter("n1", "m1", "{}", "malformed event: no kind", NOW - 60),
        DeadLetter("n2", "m2", "{}", "malformed event: no kind", NOW - 120),
        DeadLetter("n3", "m3", "{}", "state cannot be decoded", NOW - 3 * 86400),
    ]
    [finding] = checks.dead_letters(healthy(dead_letters=letters))
    assert finding.title.startswith("2 message(s)")
    assert finding.detail == "2 x malformed event: no kind"
    assert checks.dead_letters(healthy(dead_letters=letters[2:])) == []


def test_skewed_clocks_of_live_workers() -> None:
    ahead = worker(last_seen=NOW + 100, server_seen=NOW - 5)
    [finding] = checks.clock_skew(healthy(workers=[ahead]))
    assert (finding.subject, "ahead of" in finding.title) == ("w1", True)
    assert "vm1" in finding.fix
    assert checks.clock_skew(healthy(workers=[worker(last_seen=NOW + 10)])) == []


def test_a_queue_no_worker_ever_polled() -> None:
    facts = healthy(workflows=[running(("cpu", "gpu-typo"))])
    [finding] = checks.unknown_queues(facts)
    assert finding.subject == "gpu-typo"
    assert "wf1" in finding.detail


def test_lost_workers_are_a_note_only() -> None:
    gone = worker("w2", last_seen=NOW - 600, server_seen=NOW - 600)
    facts = healthy(workers=[worker(), gone])
    [finding] = checks.lost_workers(facts)
    assert (finding.severity, finding.subject) == ("info", "w2")
    assert report(facts).healthy is True  # a note does not make it unhealthy


def test_workflows_stuck_pending() -> None:
    stuck = running(status=WorkflowStatus.PENDING, created_at=NOW - 120)
    [finding] = checks.stuck_pending(healthy(workflows=[stuck]))
    assert finding.subject == "wf1"
    fresh = running(status=WorkflowStatus.PENDING, created_at=NOW - 10)
    assert checks.stuck_pending(healthy(workflows=[fresh])) == []


def test_the_report_lists_findings_in_check_order_and_is_unhealthy() -> None:
    facts = healthy(workers=[], queue_depths={"cpu": 0}, partitions=[partition(poison_depth=1)])
    result = report(facts)
    assert result.healthy is False
    assert [f.check for f in result.findings] == [
        "unserved_queue",
        "lost_dispatch",
        "poison_messages",
    ]
    assert result.summary.workers_alive == 0
    assert result.summary.queued_tasks == 1
