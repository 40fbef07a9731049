"""Storage whose one port method dies, as a process killed there: the schedules' sweep tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from shared.storage.ports import Storage


class Killer:
    def __init__(self, target: Any, method: str, after: int) -> None:
        self._target = target
        self._method = method
        self._left = after

    def __getattr__(self, name: str) -> Any:
        if name == self._method:
            method = getattr(self._target, name)

            async def killed(*args: Any, **kwargs: Any) -> Any:
                if self._left > 0:
                    self._left -= 1
                    return await method(*args, **kwargs)
                raise RuntimeError(f"killed at {name}")

            return killed
        return getattr(self._target, name)


def killed(storage: Storage, port: str, method: str, *, after: int = 0) -> Storage:
    """``storage`` whose ``port.method`` dies (the process was killed there), after ``after``
    calls of it that went through."""
    return replace(storage, **{port: Killer(getattr(storage, port), method, after)})
