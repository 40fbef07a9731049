"""The lease between passes on a Functions instance: kept while passes keep coming, renewed in the
background, given up after a short idle period (or at shutdown).

A Functions instance runs a pass per trigger invocation. Releasing the lease after every pass (the
first design) let the next pass run on another instance with a cold cache; keeping it forever would
make every other instance's invocations bounce their events. The keeper holds it while this
instance is busy and lets it go ``keep_lease_idle_s`` after the last pass, so an instance that
receives a trigger while the holder is idle gets the lease after a short wait instead of bouncing
(``Coordinator.handle_trigger_message``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from shared.coordinator.passes import PassRunner

log = logging.getLogger("dagq.coordinator")


class LeaseKeeper:
    """Keeps one coordinator's lease between its passes (see the module docstring)."""

    def __init__(self, passes: PassRunner, idle_s: float) -> None:
        self._passes = passes
        self._idle_s = idle_s
        self._last_pass = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def touch(self) -> None:
        """A pass just ended with the lease held: keep it for another idle period."""
        self._last_pass = time.monotonic()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._keep())

    async def close(self) -> None:
        """Stop keeping the lease and give it up."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._passes.lock:
            await self._passes.updater.leadership.release()

    async def _keep(self) -> None:
        leadership = self._passes.updater.leadership
        tick = max(0.05, min(self._idle_s / 4, leadership_renew_s(self._passes) / 2))
        while True:
            await asyncio.sleep(tick)
            async with self._passes.lock:  # never while a pass runs: it renews on its own
                if not leadership.held:
                    return
                if time.monotonic() - self._last_pass >= self._idle_s:
                    await leadership.release()
                    return
                try:
                    still = await leadership.take()  # renews when due
                except Exception as exc:  # transient: the next tick tries again
                    log.warning("keeping the lease failed: %r", exc)
                    continue
                if not still:
                    return


def leadership_renew_s(passes: PassRunner) -> float:
    """How often the lease must be renewed."""
    return passes.updater.options.renew_interval_s
