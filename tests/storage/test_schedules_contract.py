"""Contract tests of the schedules port: every test runs against the memory fake AND Azurite
(and Azurite behind a proxy that breaks connections)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.errors import NotFoundError, StaleStateError
from shared.storage.ports import Storage
from shared.storage.repeat import repeating
from shared.storage.schedules import ScheduleRecord, ScheduleSpec

# Larger than one binary column holds (60 000 bytes), with multi-byte characters.
BIG = "name: big\ntasks:\n" + "".join(f"  t{i}:\n    cmd: echo ü{i}\n" for i in range(5000))


def record(
    name: str = "nightly", definition: str = "name: n\n", **changes: object
) -> ScheduleRecord:
    spec = ScheduleSpec(
        name=name, cron="0 2 * * *", definition=definition, timezone="Europe/Berlin",
        params={"lr": "0.1", "ckpt": "latest"}, notify=["https://example.org/hook"],
        concurrency="forbid", catch_up=3,
    )  # fmt: skip
    base = ScheduleRecord(spec=spec, created_at=1000.5, not_before=1000.5)
    return replace(base, **changes)  # type: ignore[arg-type]


async def test_a_created_schedule_is_read_back_whole(storage: Storage) -> None:
    assert await storage.schedules.create(record(definition=BIG))
    got = await storage.schedules.get("nightly")
    assert got == record(definition=BIG)
    assert got is not None
    assert got.etag
    assert not await storage.schedules.create(record(definition="other"))  # the name is taken
    assert (await storage.schedules.get("nightly")) == record(definition=BIG)


async def test_list_is_by_name_and_missing_is_none(storage: Storage) -> None:
    for name in ("b", "a", "c.2"):
        await storage.schedules.create(record(name))
    assert [r.name for r in await storage.schedules.list()] == ["a", "b", "c.2"]
    assert await storage.schedules.get("nope") is None


async def test_update_is_under_the_etag(storage: Storage) -> None:
    await storage.schedules.create(record())
    read = await storage.schedules.get("nightly")
    assert read is not None
    noted = replace(
        read, last_slot=2000.0, runs=["nightly-20261205T010000Z"], note="skipped",
        starting=["nightly-20261205T020000Z"],
    )  # fmt: skip
    etag = await storage.schedules.update(noted)
    assert etag != read.etag
    got = await storage.schedules.get("nightly")
    assert got == noted
    assert got is not None
    assert got.etag == etag
    with pytest.raises(StaleStateError):
        await storage.schedules.update(replace(read, paused=True))  # read before the update
    await storage.schedules.delete("nightly")
    with pytest.raises(NotFoundError):
        await storage.schedules.update(got)


async def test_a_delete_with_an_etag_holds_only_for_the_schedule_as_read(storage: Storage) -> None:
    await storage.schedules.create(record())
    read = await storage.schedules.get("nightly")
    assert read is not None
    await storage.schedules.update(replace(read, starting=["nightly-1"]))  # a sweep's note
    with pytest.raises(StaleStateError):
        await storage.schedules.delete("nightly", etag=read.etag)
    current = await storage.schedules.get("nightly")
    assert current is not None
    assert current.starting == ["nightly-1"]
    await storage.schedules.delete("nightly", etag=current.etag)  # (a lost reply says False)
    assert await storage.schedules.get("nightly") is None


async def test_delete_says_whether_there_was_one(storage: Storage) -> None:
    await storage.schedules.create(record())
    assert await storage.schedules.delete("nightly")
    assert not await storage.schedules.delete("nightly")
    assert await storage.schedules.get("nightly") is None


async def test_a_repeat_that_took_effect_is_this_calls_own(storage: Storage) -> None:
    assert await storage.schedules.create(record())
    with repeating():
        assert await storage.schedules.create(record())
        assert not await storage.schedules.create(record(definition="another"))
    read = await storage.schedules.get("nightly")
    assert read is not None
    written = replace(read, last_slot=5000.0)
    etag = await storage.schedules.update(written)
    with repeating():
        assert await storage.schedules.update(written) == etag
        with pytest.raises(StaleStateError):
            await storage.schedules.update(replace(read, paused=True))
