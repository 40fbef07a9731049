"""The invariant of versioned index projections: a row's version never goes back.

A row's version is its state's run and write count (``IndexRow.version``); a projection replaces
only an older one (``Index.project``). Checked the instant a projection takes effect: a row that
held a newer version before it holds an older one after (a late projection applied, as at seed
991 of the backlog trial) is a violation, even if a later projection would have mended it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.names import index_row_key
from shared.storage.memory import MemoryStorage
from shared.storage.ports import IndexRow


class IndexVersions:
    """Hooks on the index's projections (``sim.storage.Platform``)."""

    def __init__(self, platform: Any, raw: MemoryStorage, fail: Callable[[str, str], None]) -> None:
        self._raw = raw
        self._fail = fail
        self._before: dict[str, tuple[int, int] | None] = {}
        for op in ("index.project", "index.project_many"):
            platform.effect[op] = self._projecting
            platform.after[op] = self._projected

    def _keys(self, a: tuple[Any, ...]) -> list[str]:
        rows: list[IndexRow] = a[0] if isinstance(a[0], list) else [a[0]]
        return [index_row_key(row.workflow_id, row.created_at) for row in rows]

    def _version(self, key: str) -> tuple[int, int] | None:
        row = self._raw.index.rows.get(key)
        return None if row is None else row.version

    def _projecting(self, _actor: Any, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        self._before = {key: self._version(key) for key in self._keys(a)}

    def _projected(self, actor: Any, _label: str, a: tuple[Any, ...], _r: Any) -> None:
        for key in self._keys(a):
            old, new = self._before.get(key), self._version(key)
            if old is not None and new is not None and new < old:
                self._fail(actor.name, f"index row {key} went back from version {old} to {new}")
