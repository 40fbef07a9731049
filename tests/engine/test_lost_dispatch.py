"""Lost dispatches found by the empty-queue signal: a queued attempt whose queue holds no message
is re-sent after a short grace instead of after ``lost_dispatch_after_s`` (a day by default)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared.definition.workflow import RetryPolicy
from shared.engine.sweep import presumed_lost

from .history import History, chain, dispatched, task, workflow

DAY = 86400.0


def test_an_empty_queue_gets_its_attempt_resent_after_the_grace() -> None:
    h = History(chain(2))
    h.activate()
    empty = frozenset({"cpu"})
    assert h.sweep(after_s=50, lost_after_s=DAY, empty_queues=empty) == []
    assert dispatched(h.sweep(after_s=11, lost_after_s=DAY, empty_queues=empty)) == [("t0", 1)]
    assert h.attempt("t0") == 1  # the same attempt: workers run it once
    # Sent again just now: the next re-send waits for another grace.
    assert h.sweep(after_s=30, lost_after_s=DAY, empty_queues=empty) == []
    assert dispatched(h.sweep(after_s=31, lost_after_s=DAY, empty_queues=empty)) == [("t0", 1)]


def test_a_busy_queue_or_another_empty_queue_changes_nothing() -> None:
    h = History(chain(2))
    h.activate()
    assert h.sweep(after_s=3600, lost_after_s=DAY) == []
    assert h.sweep(after_s=10, lost_after_s=DAY, empty_queues=frozenset({"gpu"})) == []


def test_a_delayed_retry_is_not_lost_while_it_is_invisible() -> None:
    h = History(workflow(task("a", retries=1, retry=RetryPolicy(initial_delay_s=600))))
    h.activate()
    h.failed("a")
    empty = frozenset({"cpu"})
    assert h.sweep(after_s=300, lost_after_s=DAY, empty_queues=empty) == []
    assert dispatched(h.sweep(after_s=400, lost_after_s=DAY, empty_queues=empty)) == [("a", 2)]


@given(
    sent=st.integers(0, 10**9),
    visible_after=st.integers(-(10**6), 10**6),
    elapsed=st.integers(0, 10**9),
    empty=st.booleans(),
)
def test_the_signal_never_fires_sooner_than_the_grace_or_later_than_the_backstop(
    sent: int, visible_after: int, elapsed: int, empty: bool
) -> None:
    now = sent + elapsed
    lost = presumed_lost(
        now, sent + visible_after, sent, empty, lost_after_s=DAY, empty_grace_s=60.0
    )
    if elapsed <= 60_000:
        assert not lost
    if elapsed > DAY * 1000:
        assert lost
    if not empty:
        assert lost == (elapsed > DAY * 1000)
