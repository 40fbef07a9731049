"""Retry delays: exponential backoff with deterministic jitter.

The engine is pure, so the jitter is not random: it is derived from a hash of
(workflow id, task name, attempt). Replaying the same failure yields the same delay, and different
tasks failing together still spread out.
"""

from __future__ import annotations

import hashlib

from shared.definition.workflow import RetryPolicy


def jitter_fraction(workflow_id: str, task: str, attempt: int) -> float:
    """A stable pseudo-random number in [0, 1) for this (workflow, task, attempt)."""
    digest = hashlib.blake2b(
        f"{workflow_id}\x00{task}\x00{attempt}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def retry_delay_s(
    policy: RetryPolicy, retry_number: int, *, workflow_id: str, task: str, attempt: int
) -> float:
    """Seconds to wait before retry number ``retry_number`` (1 = the first retry) of a task.

    ``initial_delay_s * multiplier ** (retry_number - 1)``, capped at ``max_delay_s``; then up to
    ``jitter`` of it is taken off, by the deterministic fraction of ``(workflow_id, task, attempt)``
    (``attempt`` is the number of the attempt being scheduled). Never negative, never above the cap.
    """
    if retry_number < 1 or policy.initial_delay_s <= 0:
        return 0.0
    cap = max(policy.max_delay_s, 0.0)
    try:
        delay = policy.initial_delay_s * policy.multiplier ** (retry_number - 1)
    except OverflowError:
        delay = cap
    delay = min(delay, cap)
    jitter = min(max(policy.jitter, 0.0), 1.0)
    if jitter:
        delay -= delay * jitter * jitter_fraction(workflow_id, task, attempt)
    return max(delay, 0.0)
