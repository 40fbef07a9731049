"""Waiting in the host's background tasks: a sleep a stop cuts short, a task awaited quietly."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def sleep_unless(stopping: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds``, or less if ``stopping`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)


async def quietly(task: asyncio.Task[Any]) -> None:
    """Wait for ``task`` to end (typically: cancelled), whatever it raises."""
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
