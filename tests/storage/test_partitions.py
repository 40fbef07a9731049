"""Partitions: their names, how a workflow's partition is chosen, and partition views of a Storage
(each partition its own event queue, poison queue and lease, on memory and on Azurite alike)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.deployment import partition_from_metadata, partition_metadata, partition_of
from shared.limits import MAX_PARTITIONS
from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.ports import Storage

NAMES = ResourceNames("dagq")


def test_partition_zero_keeps_the_single_partition_names() -> None:
    assert NAMES.partition_event_queue(0) == NAMES.event_queue == "dagq-events"
    assert NAMES.partition_poison_queue(0) == NAMES.event_poison_queue == "dagq-events-poison"
    assert NAMES.lease_blob(0) == NAMES.lease_blob() == "_coordinator.lease"


def test_other_partitions_have_names_of_their_own() -> None:
    queues = {NAMES.partition_event_queue(p) for p in range(MAX_PARTITIONS)}
    poison = {NAMES.partition_poison_queue(p) for p in range(MAX_PARTITIONS)}
    leases = {NAMES.lease_blob(p) for p in range(MAX_PARTITIONS)}
    assert len(queues) == len(poison) == len(leases) == MAX_PARTITIONS
    assert not queues & poison
    assert NAMES.partition_event_queue(3) == "dagq-events-p3"
    assert NAMES.partition_poison_queue(3) == "dagq-events-p3-poison"
    assert NAMES.lease_blob(3) == "_coordinator-p3.lease"
    longest = ResourceNames("a" * 20).partition_poison_queue(MAX_PARTITIONS - 1)
    assert len(longest) <= 63


@pytest.mark.parametrize("bad", [-1, MAX_PARTITIONS])
def test_out_of_range_partitions_have_no_names(bad: int) -> None:
    with pytest.raises(ValueError, match="invalid partition"):
        NAMES.partition_event_queue(bad)


@given(st.text(min_size=1, max_size=64), st.integers(1, MAX_PARTITIONS))
def test_partition_of_is_stable_and_in_range(workflow_id: str, partitions: int) -> None:
    chosen = partition_of(workflow_id, partitions)
    assert 0 <= chosen < partitions
    assert chosen == partition_of(workflow_id, partitions)
    assert partition_of(workflow_id, 1) == 0


def test_partition_of_spreads_workflows() -> None:
    counts = [0] * 8
    for i in range(8000):
        counts[partition_of(f"20261201-120000-{i:06d}", 8)] += 1
    assert min(counts) > 800  # 1,000 each on average


def test_partition_round_trips_through_metadata() -> None:
    assert partition_from_metadata(partition_metadata(5)) == 5
    assert partition_from_metadata({}) == 0  # workflows from before partitions existed


def test_partitions_setting_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGQ_STORAGE", "UseDevelopmentStorage=true")
    assert Settings().partitions == 1
    monkeypatch.setenv("DAGQ_PARTITIONS", "8")
    assert Settings().partitions == 8
    monkeypatch.setenv("DAGQ_PARTITIONS", "0")
    with pytest.raises(ValueError, match="DAGQ_PARTITIONS"):
        Settings()


async def test_partition_views_have_their_own_queues_and_leases(storage: Storage) -> None:
    names = ResourceNames(storage.event_queue.name.removesuffix("-events"))
    one = storage.for_partition(1)
    assert storage.for_partition(0) is storage
    assert one.partition == 1
    assert one.for_partition(1) is one
    assert one.event_queue.name == names.partition_event_queue(1)
    assert one.event_poison_queue.name == names.partition_poison_queue(1)
    await one.event_queue.ensure()
    await one.event_queue.send("to partition 1")
    assert await storage.event_queue.receive(32, 30) == []
    assert [m.text for m in await one.event_queue.receive(32, 30)] == ["to partition 1"]
    zero_lease = await storage.lease.acquire(15)
    assert zero_lease is not None
    one_lease = await one.lease.acquire(15)  # another partition's lease is free
    assert one_lease is not None
    assert await storage.for_partition(1).lease.acquire(15) is None  # views share the lease
    await one.lease.release(one_lease)
    await storage.lease.release(zero_lease)
