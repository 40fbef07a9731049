"""Retry delays: exponential, capped, with deterministic jitter."""

from __future__ import annotations

from shared.definition.workflow import RetryPolicy
from shared.engine.backoff import jitter_fraction, retry_delay_s


def delay(policy: RetryPolicy, n: int, task: str = "t") -> float:
    return retry_delay_s(policy, n, workflow_id="wf", task=task, attempt=n + 1)


def test_default_policy_retries_at_once() -> None:
    assert delay(RetryPolicy(), 1) == 0.0


def test_exponential_and_capped_without_jitter() -> None:
    policy = RetryPolicy(initial_delay_s=2, multiplier=3, max_delay_s=50)
    assert [delay(policy, n) for n in (1, 2, 3, 4)] == [2, 6, 18, 50]
    assert delay(policy, 10_000) == 50  # no overflow on absurd retry counts


def test_jitter_is_deterministic_bounded_and_spreads_tasks() -> None:
    policy = RetryPolicy(initial_delay_s=100, multiplier=1, max_delay_s=100, jitter=0.5)
    delays = [delay(policy, 1, task=f"t{i}") for i in range(50)]
    assert delays == [delay(policy, 1, task=f"t{i}") for i in range(50)]
    assert all(50 <= d <= 100 for d in delays)
    assert len(set(delays)) == 50
    assert 0 <= jitter_fraction("wf", "t", 1) < 1
