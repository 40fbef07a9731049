"""Virtual time: an asyncio event loop whose clock only moves when every task waits.

``VirtualLoop`` runs every ready callback, and when none is left jumps its clock straight to the
next timer (``asyncio.sleep``, ``wait_for`` timeouts, the coordinator's lease renewals): a
simulated hour takes as long as the work done in it. No file descriptor is ever polled, so the
simulation can do no I/O. The order of callbacks is asyncio's own (FIFO, timers by due time), so
one seed gives one schedule.

``virtual_time`` points the ``time`` name of the coordinator's modules (which read
``time.monotonic()`` for lease margins, budgets and pacing) at the loop's clock while a
simulation runs, and puts the real module back afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

EPOCH = 1_800_000_000.0
"""Virtual time at the start of every simulation (wall clock and monotonic alike)."""


class Deadlock(RuntimeError):
    """Nothing is ready and no timer is due: every task waits for something that cannot come."""


class _NoSelector:
    """Stands in for the selector: 'polling' for ``timeout`` seconds moves virtual time on."""

    def __init__(self, loop: VirtualLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        if timeout is None:
            raise Deadlock("the simulation deadlocked: no task can make progress")
        if timeout > 0:
            scheduled = self._loop._scheduled  # type: ignore[attr-defined]
            due = scheduled[0]._when if scheduled else self._loop.now + timeout
            self._loop.now = max(self._loop.now + timeout, due)
        return []

    def close(self) -> None:
        pass


class VirtualLoop(asyncio.BaseEventLoop):
    """An event loop on a virtual clock (seconds, starting at ``EPOCH``)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = EPOCH
        self._selector = _NoSelector(self)
        self._clock_resolution = 1e-6  # above the float spacing at EPOCH (2.4e-7)

    def time(self) -> float:
        return self.now

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        """Run ``func`` at once, in the loop's thread (``asyncio.to_thread``, as the schedules'
        sweep compiles with): a thread would finish at a wall-clock moment, and virtual time
        would jump on meanwhile — no seed would replay."""
        future = self.create_future()
        try:
            future.set_result(func(*args))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def _write_to_self(self) -> None:
        pass


class _VirtualTimeModule:
    """The ``time`` module as the coordinator sees it during a simulation."""

    def __init__(self, loop: VirtualLoop) -> None:
        self._loop = loop

    def monotonic(self) -> float:
        return self._loop.now

    def time(self) -> float:
        return self._loop.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@contextlib.contextmanager
def virtual_time(loop: VirtualLoop, packages: tuple[str, ...] = ("shared.",)) -> Iterator[None]:
    """Point every loaded module of ``packages`` that imported ``time`` at the loop's clock."""
    shim = _VirtualTimeModule(loop)
    patched = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith(packages) and getattr(module, "time", None) is time
    ]
    for module in patched:
        module.time = shim  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in patched:
            module.time = time  # type: ignore[attr-defined]


def run(main: Awaitable[T], loop: VirtualLoop | None = None) -> T:
    """Run ``main`` to completion on a fresh virtual loop (with virtual time in shared/)."""
    loop = loop or VirtualLoop()
    loop.set_exception_handler(lambda _loop, _context: None)  # dead actors' leftovers
    try:
        with virtual_time(loop):
            return loop.run_until_complete(main)
    finally:
        with contextlib.suppress(Exception):
            _cancel_all(loop)
        loop.close()


def _cancel_all(loop: VirtualLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        with virtual_time(loop):
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
