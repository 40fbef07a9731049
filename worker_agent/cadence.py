"""How often a running task's worker touches storage, as a function of the task's age.

A young task is watched closely (the first intervals are the ``--cancel-check-s`` and ``--live-s``
settings); an older one less often: each interval is a quarter of the task's age, up to a cap. A
long task's requests then stop growing at the young task's rate: a 60 s task makes 8 cancel checks
instead of 12, and each ten minutes past the first two make 20 of them (at the default 30 s cap)
instead of 120. What users rely on keeps a documented bound that grows with the task's age and
never passes its cap:

- a cancelled task is stopped within ``cancel_check_interval(age)`` (+ ``--kill-grace-s``);
- ``dagq logs -f`` and the dashboard see a task's new output within ``live_interval(age)``;
- if the worker dies, its task's message reappears for another worker within the visibility last
  asked for, ``visibility_at(age)``: ``--visibility-s`` while young, at most ``--visibility-max-s``.

The worker's loops and the benchmark's model of a real worker (``bench/bench_concurrent.py``) both
use these functions, so the figure the benchmark prints is the worker's own cadence.
"""

from __future__ import annotations

from collections.abc import Callable

from worker_agent.config import WorkerSettings

AGE_FRACTION = 0.25
"""Past its first interval, a task is looked at every quarter of its age (up to the cap)."""


def growing(age_s: float, first_s: float, cap_s: float) -> float:
    """``first_s`` while the task is young, then ``AGE_FRACTION`` of its age, at most ``cap_s``
    (never below ``first_s``: a cap under the first interval means a fixed interval)."""
    return max(first_s, min(age_s * AGE_FRACTION, cap_s))


def cancel_check_interval(settings: WorkerSettings, age_s: float) -> float:
    """Wait before the next cancel check of a task that has run ``age_s``."""
    return growing(age_s, settings.cancel_check_s, settings.cancel_check_max_s)


def live_interval(settings: WorkerSettings, age_s: float) -> float:
    """Wait before the next live-log append of a task that has run ``age_s``."""
    return growing(age_s, settings.live_s, settings.live_max_s)


def visibility_at(settings: WorkerSettings, age_s: float) -> int:
    """The visibility a heartbeat asks for once the message has been held ``age_s``."""
    return int(growing(age_s, settings.visibility_s, settings.visibility_max_s))


def heartbeat_schedule(settings: WorkerSettings, age_s: float) -> tuple[int, float]:
    """The visibility to ask for at ``age_s`` and the wait before the next extension: a third of
    it (``--heartbeat-s`` when set)."""
    visibility = visibility_at(settings, age_s)
    return visibility, settings.heartbeat_s or visibility / 3


def progress_interval(settings: WorkerSettings) -> float:
    """Soonest a changed progress is sent to the registry after the previous beat."""
    return settings.registry_s if settings.progress_s is None else settings.progress_s


def ticks_within(interval: Callable[[float], float], duration_s: float) -> int:
    """How many times a loop that waits ``interval(age)`` between looks looks during a task of
    ``duration_s`` (the first look after the first interval, as the worker's loops do)."""
    age, ticks = 0.0, 0
    while True:
        age += interval(age)
        if age > duration_s:
            return ticks
        ticks += 1
