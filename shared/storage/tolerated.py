"""Storage failures a component tolerates, counted and shown instead of only logged.

Some storage calls may fail without harming correctness: a cache look-up or record (the task
just runs), an index projection (the next flush or sweep writes it), a worker's registry
heartbeat or live-log append. "Running is always correct" — but a failure that repeats (a role
missing on Azure: a 403 on every call) must still reach a person. Each such failure other than
not-found is:

- counted by kind, and logged once as ``tolerated storage failure: ...`` (the alert
  ``tolerated-storage-failures`` in infra/modules/alerts.bicep matches that text);
- added to the coordinator pass's stats record (``PassStats.tolerated``);
- noted in the registry (``Registry.note_failure``; at most once a minute per kind and process),
  where ``dagq doctor`` finds it and says what to fix.

Each process keeps one ``Tolerated`` (``TOLERATED``): the app's components and a worker agent
each count their own, and say who they are when they publish.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum

from shared.storage.registry import FailureNote, Registry

log = logging.getLogger("dagq.storage")

NOTE_EVERY_S = 60.0
"""A kind's registry note is rewritten at most this often per process (its count grows)."""


class Kind(StrEnum):
    """What failed, and what the failure costs."""

    CACHE_LOOKUP = "cache look-up"
    """The app could not read the result cache: the task runs instead of being reused."""
    CACHE_RECORD = "cache record"
    """The app could not write a cache entry: a later run computes the result again."""
    PROJECTION = "index projection"
    """The app could not update a workflow's index row: listings lag until a later write."""
    REGISTRY_BEAT = "registry heartbeat"
    """A worker could not write its registry row: ``dagq workers`` and doctor do not see it."""
    LOG_APPEND = "log append"
    """A worker could not append a running task's output to its log blob: live logs stall."""
    CACHE_EXPIRY = "cache expiry"
    """A bulk purge could not list or delete expired cache entries: they wait for a later one."""


def describe(error: BaseException) -> str:
    """A failure in a few words: the service's status and error code, or the exception type."""
    status = getattr(error, "status_code", None)
    code = getattr(error, "error_code", None)
    if status is not None:
        return f"{status} {code}" if code else f"HTTP {status}"
    return type(error).__name__


def is_not_found(error: BaseException) -> bool:
    return getattr(error, "status_code", None) == 404


class Tolerated:
    """One process's tolerated failures: counts since the last ``take``, and the notes due."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.reset()

    def reset(self, clock: Callable[[], float] | None = None) -> None:
        """Forget every count and note (a process starting anew; tests); with ``clock``, read
        time from it from now on (the simulation's virtual clock)."""
        if clock is not None:
            self._clock = clock
        self._pending: dict[Kind, int] = {}
        self._totals: dict[Kind, int] = {}
        self._details: dict[Kind, str] = {}
        self._noted: dict[Kind, float] = {}

    def count(self, kind: Kind, error: BaseException, subject: str = "") -> None:
        """Count one failure of ``kind`` (a not-found is no failure: nothing is counted)."""
        if is_not_found(error):
            return
        detail = describe(error)
        self._pending[kind] = self._pending.get(kind, 0) + 1
        self._totals[kind] = self._totals.get(kind, 0) + 1
        self._details[kind] = detail
        about = f" ({subject})" if subject else ""
        log.warning("tolerated storage failure: %s%s failed: %s; %r", kind, about, detail, error)

    def take(self) -> dict[str, int]:
        """Failures counted since the last call, by kind (a pass's stats record)."""
        taken = {str(kind): n for kind, n in self._pending.items()}
        self._pending.clear()
        return taken

    async def publish(self, registry: Registry, source: str) -> None:
        """Note in the registry, as ``source`` (``app``, ``worker <id>``), each kind that failed
        since its last note a minute or more ago (best effort: a note that cannot be written is
        logged and tried at the next call)."""
        now = self._clock()
        for kind, total in self._totals.items():
            if now - self._noted.get(kind, -1e18) < NOTE_EVERY_S:
                continue
            note = FailureNote(source, str(kind), total, self._details[kind], now)
            try:
                await registry.note_failure(note)
            except Exception as exc:  # the log line above is the record then
                log.warning("could not note a tolerated failure in the registry: %r", exc)
                continue
            self._noted[kind] = now


TOLERATED = Tolerated()
"""This process's tolerated failures."""
