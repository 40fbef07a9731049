"""The empty-queue repair under an event backlog (issue 30, item 3): an invariant on the re-sends
of the sweep's empty-queue repair, exact on the real code.

The repair re-sends a queued attempt whose task queue held no message when the sweep began, once
``now - sent > grace + backlog``, where ``backlog`` is how long the event queue's oldest visible
event had waited at the sweep's peek (``shared.coordinator.backlog``) and ``sent`` when the
attempt was last sent. So a report of the attempt that was visible at that peek, inserted at
``ins``, gives ``backlog >= peek - ins`` on the sweeping coordinator's clock, and a re-send
decided at ``now`` then needs ``ins > sent + grace - (now - peek)``. Each coordinator's clock is
skewed by a constant (``sent`` is on the clock of whichever coordinator sent it, and cancels out
of the sum with the skew of ``now``); storage's clock inserts the report. The check, as a state
write of a sweep's re-send takes effect at ``written`` (no earlier than ``now``):

    no report of the re-sent attempt, visible at the sweeping coordinator's last peek, was
    inserted at or before ``sent + grace - (written - peek)``.

It is judged only when that coordinator's last peek answered (a peek that failed, or whose reply
was lost, is a backlog of 0: then the plain grace holds and the repair may rightly re-send).
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from shared import codec
from shared.coordinator import CoordinatorOptions
from shared.errors import MessageError
from shared.messages import TaskCompletedEvent, TaskFailedEvent, decode_event
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from sim.invariants import Oracle
from sim.storage import Actor, Platform, chain_hook

LAG_CHANCE = 0.5
"""How often a run has a lag window (``Lag``)."""
LAG_BUDGET_S = 0.001
"""The budget of a lagging partition's passes: they drain one receive, then sweep."""
LAG_WORKERS = 6
"""Workers that join a run with a lag window as it begins (a scale-out: the workers outpace the
coordinators, so the task queues empty while the reports wait)."""
LAG_SUBMITS = 6
"""Workflows submitted at once ``LAG_BURST_LEAD_S`` before a lag window (the burst of events)."""
LAG_BURST_LEAD_S = 5.0
LAG_TIMER_S = 20.0
"""A lagging partition's host runs a timer pass every ``LAG_TIMER_S / 2`` to ``LAG_TIMER_S``
seconds (the timer trigger's period)."""


@dataclass(frozen=True)
class Lag:
    """A window of the fault phase in which the event queues fall behind: the Functions hosts
    get no queue trigger (the app lags, as under a burst of events) and run only timer passes,
    each draining one receive of ``batch_size`` 1 before its sweeps, while ``LAG_WORKERS`` more
    workers join. Reports pile up on the event queues while the workers empty the task queues:
    the case of the backlog grace. Drawn from a random stream of its own."""

    on: bool = False
    start: float = 0.0
    end: float = 0.0

    @classmethod
    def draw(cls, seed: int, epoch: float) -> Lag:
        """The run's lag window, if any. The stream (``+ 44``) was chosen to leave seed 23, then
        the first to catch ``purge-whole-id`` (a rare tooth), without a window (with ``+ 43`` no
        seed of 0..449 caught it: docs/simulation.md)."""
        rng = random.Random(seed * 7919 + 44)
        if rng.random() >= LAG_CHANCE:
            return cls()
        start = epoch + rng.uniform(20.0, 80.0)
        return cls(True, start, start + rng.uniform(40.0, 70.0))

    def lagging(self, now: float) -> bool:
        """Whether the hosts lag at ``now``."""
        return self.on and self.start <= now < self.end

    def options(self, options: CoordinatorOptions) -> CoordinatorOptions:
        """The coordinators' options (one event per receive in a run with a lag window)."""
        if not self.on:
            return options
        return dataclasses.replace(options, batch_size=1, receives_per_cycle=1)


ROUNDING_S = 0.002
"""The engine's times are whole milliseconds (``now_ms``, ``sent_ms``): a margin for both."""

PEEK = "queue.oldest_visible_at"


@dataclass
class _Peek:
    at: float
    reports: dict[tuple[str, str, int, int | None], float]
    """(workflow, task, attempt, incarnation) -> when its earliest visible report was inserted."""


@dataclass
class BacklogRepairs:
    """Installs the hooks of the check on ``platform`` (beside the oracle's own)."""

    platform: Platform
    raw: MemoryStorage
    oracle: Oracle
    grace_s: float
    peeks: dict[str, _Peek | None] = field(default_factory=dict)
    """Coordinator process -> what its last peek saw (None: it failed or its reply was lost)."""
    judged: int = 0
    """Re-sends of the repair judged against a peek (the check is not vacuous)."""

    def __post_init__(self) -> None:
        p = self.platform
        chain_hook(p.before, PEEK, self._peek_issued)
        chain_hook(p.after, PEEK, self._peeked)
        chain_hook(p.lost, PEEK, self._peek_issued)
        chain_hook(p.effect, "workflows.write_state", self._writing)

    def _peek_issued(self, actor: Actor, _label: str, _a: tuple[Any, ...], _r: Any) -> None:
        self.peeks[actor.name] = None

    def _peeked(self, actor: Actor, label: str, _a: tuple[Any, ...], _r: Any) -> None:
        queue = self.raw.queues.states.get(label.split("[", 1)[1].rstrip("]"))
        now = self.platform.clock()
        reports: dict[tuple[str, str, int, int | None], float] = {}
        for message in queue.messages.values() if queue is not None else ():
            if message.visible_at > now:
                continue
            try:
                event = decode_event(message.text)
            except MessageError:
                continue
            if isinstance(event, TaskCompletedEvent | TaskFailedEvent):
                key = (event.workflow_id, event.task, event.attempt, event.incarnation)
                reports[key] = min(reports.get(key, message.inserted_at), message.inserted_at)
        self.peeks[actor.name] = _Peek(now, reports)

    def _writing(self, actor: Actor, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        workflow_id, data, etag = a[0], a[1], a[2]
        peek = self.peeks.get(actor.name)
        known = self.oracle.workflows.get(workflow_id)
        blob = self.raw.workflows.container.blobs.get(ResourceNames.state_blob(workflow_id))
        if peek is None or known is None or blob is None or blob.etag != etag:
            return  # no peek to judge by, or refused (If-Match): nothing is written
        old, new = codec.decode_state(blob.data, known.wf), codec.decode_state(data, known.wf)
        written = self.platform.clock()
        for i in range(min(len(old.codes), len(new.codes))):
            sent_ms = new.sent_ms.get(i)
            was = old.sent_ms.get(i, old.queued_ms[i])
            if (
                sent_ms is None or sent_ms == old.sent_ms.get(i) or was is None
                or new.task(i).state != "queued" or old.task(i).state != "queued"
                or new.attempt[i] != old.attempt[i] or new.run != old.run
            ):  # fmt: skip
                continue  # not a re-send of the same queued attempt
            self.judged += 1
            key = (workflow_id, new.names[i], new.attempt[i], new.incarnation)
            inserted = peek.reports.get(key)
            limit = was / 1000 + self.grace_s - (written - peek.at) - ROUNDING_S
            if inserted is not None and inserted <= limit:
                self.oracle.fail(
                    actor.name,
                    f"{workflow_id}: the empty-queue repair re-sent {new.names[i]}/"
                    f"{new.attempt[i]}, whose report had waited on the event queue since"
                    f" {inserted - was / 1000:.1f} s after it was sent (visible at the sweep's"
                    f" peek, {written - peek.at:.1f} s before): the backlog was not counted",
                )
