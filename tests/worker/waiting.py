"""Waiting in the worker's tests: until a condition holds, within a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_for(predicate: Callable[[], bool], timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")
