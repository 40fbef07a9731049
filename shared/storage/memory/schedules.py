"""The schedules table in memory (``shared.storage.schedules``), for tests; the same contract
tests run against it and the Azure adapter."""

from __future__ import annotations

import builtins
import itertools
from dataclasses import replace

from shared.errors import NotFoundError, StaleStateError
from shared.storage.repeat import is_repeat
from shared.storage.schedules import MAX_SCHEDULES, ScheduleRecord

_etags = itertools.count(1)


class MemorySchedules:
    """Schedules over a dict, each with an ETag that changes on every write."""

    def __init__(self) -> None:
        self.records: dict[str, ScheduleRecord] = {}

    def _stored(self, record: ScheduleRecord) -> str:
        etag = f'W/"sched{next(_etags)}"'
        self.records[record.name] = replace(record, etag=etag)
        return etag

    async def create(self, record: ScheduleRecord) -> bool:
        if record.name in self.records:
            # A repeat whose first try took effect finds exactly this record (the adapter's rule).
            return is_repeat() and self.records[record.name] == record
        self._stored(record)
        return True

    async def get(self, name: str) -> ScheduleRecord | None:
        return self.records.get(name)

    async def list(self) -> builtins.list[ScheduleRecord]:
        return [self.records[name] for name in sorted(self.records)][:MAX_SCHEDULES]

    async def update(self, record: ScheduleRecord) -> str:
        stored = self.records.get(record.name)
        if stored is None:
            raise NotFoundError(f"schedule {record.name!r} does not exist")
        if stored.etag != record.etag:
            if is_repeat() and stored == record:
                return stored.etag
            raise StaleStateError(f"schedule {record.name!r} changed meanwhile")
        return self._stored(record)

    async def delete(self, name: str, etag: str | None = None) -> bool:
        stored = self.records.get(name)
        if stored is None:
            return False
        if etag is not None and stored.etag != etag:
            raise StaleStateError(f"schedule {name!r} changed meanwhile")
        del self.records[name]
        return True
