"""Storage whose one port method dies, as a process killed there: the schedules' sweep tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from shared.storage.ports import Storage


class Killer:
    def __init__(self, target: Any, method: str) -> None:
        self._target = target
        self._method = method

    def __getattr__(self, name: str) -> Any:
        if name == self._method:

            async def killed(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError(f"killed at {name}")

            return killed
        return getattr(self._target, name)


def killed(storage: Storage, port: str, method: str) -> Storage:
    """``storage`` whose ``port.method`` dies (the process was killed there)."""
    return replace(storage, **{port: Killer(getattr(storage, port), method)})
