"""Machine lives (``shared.storage.machines``): the rows cost reports take the pool's VM-hours
from. The port's tests run against the memory fake AND Azurite (the ``storage`` fixture)."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.storage.machines import (
    BOOT_COUNTS_WITHIN_S,
    MachineLife,
    counts_from,
    kernel_boot,
    machine_partition,
    partitions_between,
)
from shared.storage.ports import Storage

MAY_31 = calendar.timegm((2026, 5, 31, 22, 0, 0))
JUNE_2 = calendar.timegm((2026, 6, 2, 0, 0, 0))


def life(host: str = "vm-1", booted_at: float = MAY_31, **changes: object) -> MachineLife:
    base = MachineLife(host, booted_at, booted_at + 3600, "Standard_NC4as_T4_v3", 1)
    return MachineLife(**{**base.__dict__, **changes})  # type: ignore[arg-type]


async def test_a_machine_is_one_row_whatever_agent_writes_it(storage: Storage) -> None:
    # A pool VM runs one agent per queue: both write the same boot's row, the later one wins.
    await storage.registry.note_machine(life(last_seen=MAY_31 + 600))
    await storage.registry.note_machine(life(last_seen=MAY_31 + 7200))
    [got] = await storage.registry.machines(MAY_31 - 86400, JUNE_2)
    assert got == life(last_seen=MAY_31 + 7200, boot=MAY_31)  # boot: as counted
    assert got.hours_within(MAY_31 - 86400, JUNE_2) == pytest.approx(2.0)


async def test_a_report_reads_the_machines_that_overlap_its_period(storage: Storage) -> None:
    # Booted in May, still up in June: a June report counts its June hours only.
    await storage.registry.note_machine(life("long", MAY_31, last_seen=JUNE_2))
    await storage.registry.note_machine(life("gone", MAY_31 - 86400 * 5))  # ended before June
    await storage.registry.note_machine(life("new", JUNE_2 - 3600, last_seen=JUNE_2))
    june_1 = calendar.timegm((2026, 6, 1, 0, 0, 0))
    got = {m.host: m for m in await storage.registry.machines(june_1, JUNE_2)}
    assert sorted(got) == ["long", "new"]
    assert got["long"].hours_within(june_1, JUNE_2) == pytest.approx(24.0)
    assert got["new"].hours_within(june_1, JUNE_2) == pytest.approx(1.0)


async def test_awkward_host_names_round_trip(storage: Storage) -> None:
    await storage.registry.note_machine(life("a/b#c?d\\e 1"))
    [got] = await storage.registry.machines(MAY_31 - 1, MAY_31 + 10)
    assert got.host == "a/b#c?d\\e 1"


async def test_an_unreadable_machine_row_is_skipped(storage: Storage) -> None:
    from shared.storage.azure import AzureStorage

    await storage.registry.note_machine(life())
    if isinstance(storage, AzureStorage):  # a forger with the table role writes any row
        table = storage.clients.table.get_table_client(storage.names.registry_table)
        await table.upsert_entity(
            {
                "PartitionKey": machine_partition(MAY_31),
                "RowKey": "x",
                "Host": "x",
                "BootedAt": 1e999,
                "LastSeen": "soon",
            }
        )
    assert [m.host for m in await storage.registry.machines(MAY_31 - 1, JUNE_2)] == ["vm-1"]


def test_the_months_read_cover_the_period_and_the_month_before() -> None:
    assert partitions_between(JUNE_2, JUNE_2) == ["machine-202605", "machine-202606"]
    jan = calendar.timegm((2027, 1, 3, 0, 0, 0))
    assert partitions_between(MAY_31, jan)[0] == "machine-202604"
    assert partitions_between(MAY_31, jan)[-1] == "machine-202701"
    assert len(partitions_between(MAY_31, jan)) == 10


@given(
    booted=st.floats(0, 4e9),
    length=st.floats(0, 1e7),
    since=st.floats(0, 4e9),
    span=st.floats(0, 1e8),
)
def test_hours_within_a_period_never_exceed_the_life_or_the_period(
    booted: float, length: float, since: float, span: float
) -> None:
    one = MachineLife("h", booted, booted + length)
    hours = one.hours_within(since, since + span)
    assert 0 <= hours <= min(length, span) / 3600 + 1e-9
    assert one.machine == f"h@{int(booted)}"
    if since <= booted and booted + length <= since + span:
        # (booted + length) - booted is length within float rounding at ~4e9 s: 1e-9 h (3.6 us)
        assert hours == pytest.approx(length / 3600, abs=1e-9)


def test_a_pool_vm_counts_from_boot_a_long_lived_machine_from_the_agent(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3\nbtime 1700000000\nprocesses 9\n")
    boot = kernel_boot(stat)
    assert boot == 1700000000
    assert counts_from(1700000000 + 90.5, boot) == boot  # boot and setup are the pool's
    late = 1700000000 + BOOT_COUNTS_WITHIN_S + 1
    assert counts_from(late, boot) == int(late)  # a container on an old node, a dev box
    assert kernel_boot(tmp_path / "missing") is None
    assert counts_from(1700000090.7, None) == 1700000090


async def test_the_agents_of_one_boot_share_a_row_whatever_their_start(storage: Storage) -> None:
    # Two agents of a dev box, started hours after its boot: one machine, counted from the
    # latest writer's start (the row is replaced, never summed).
    boot = MAY_31 - 86400
    await storage.registry.note_machine(life(booted_at=MAY_31, last_seen=MAY_31 + 60, boot=boot))
    await storage.registry.note_machine(
        life(booted_at=MAY_31 + 30, last_seen=MAY_31 + 90, boot=boot)
    )
    [got] = await storage.registry.machines(MAY_31 - 1, JUNE_2)
    assert (got.machine, got.booted_at, got.boot) == (f"vm-1@{int(boot)}", MAY_31 + 30, boot)
