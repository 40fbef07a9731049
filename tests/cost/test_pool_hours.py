"""The pool's VM-hours in a period's cost report: every machine up in the period, from boot to its
latest note, priced by its VM size (issue 28, item 12: only the tasks' GPU-hours were reported, so
the boot and idle tail the pool paid for never showed)."""

from __future__ import annotations

from shared.cost.prices import PriceTable
from shared.ops import cost
from shared.storage.machines import MachineLife
from shared.storage.memory import memory_storage
from tests.coordinator.helpers import fan, submit

T4 = "Standard_NC4as_T4_v3"
A100x2 = "Standard_NC48ads_A100_v4"


async def test_the_pool_is_reported_by_vm_size_beside_what_tasks_used() -> None:
    storage = memory_storage("pool")
    await submit(storage, fan(2), "wf1", 10_000.0)
    day = 86_400.0
    lives = [
        MachineLife("t4-a", day, day + 2 * 3600, T4, 1),  # 2 h
        MachineLife("t4-b", day + 3600, day + 2 * 3600, T4, 1),  # 1 h, still up
        MachineLife("a100", day, day + 7200, A100x2, 2),  # 2 h, 2 GPUs
        MachineLife("laptop", day, day + 1800, "", 0),  # half an hour, no size
        MachineLife("old", 0.0, day - 120, T4, 1),  # before the period: not counted
    ]
    for life in lives:
        await storage.registry.note_machine(life)
    prices = PriceTable(vms={A100x2: 6.0})
    report = await cost.period_cost(
        storage, since=day - 60, by="queue", prices=prices, now=day + 3 * 3600, limit=10
    )
    by_size = {p.vm_size: p for p in report.pool}
    assert [p.vm_size for p in report.pool] == [T4, A100x2, ""]  # most VM-hours first
    assert (by_size[T4].machines, by_size[T4].vm_hours, by_size[T4].gpu_hours) == (2, 3.0, 3.0)
    assert by_size[T4].estimated_cost == 3 * 0.526  # the list price
    assert by_size[A100x2].estimated_cost == 2 * 6.0  # the price table's own wins
    assert by_size[A100x2].gpu_hours == 4.0
    assert by_size[""].estimated_cost is None  # counted, not priced
    assert report.pool_vm_hours == 5.5
    assert report.pool_gpu_hours == 7.0
    assert report.pool_cost == 3 * 0.526 + 12.0


def test_the_text_report_says_what_the_pool_paid_for_and_what_tasks_used() -> None:
    from rich.console import Console

    from shared.cli.cost_render import period_view
    from shared.views import CostReport, PoolMachines

    report = CostReport(
        since=0, by="queue", currency="USD", workflows=1, truncated=False, gpu_hours=1.5,
        cpu_hours=0, estimated_cost=1, cached_saved_hours=0, groups=[],
        pool=[PoolMachines(vm_size=T4, machines=2, vm_hours=3, gpu_hours=3, estimated_cost=1.58)],
        pool_vm_hours=3, pool_gpu_hours=3, pool_cost=1.58,
    )  # fmt: skip
    console = Console(width=200, record=True)
    console.print(period_view(report))
    text = console.export_text()
    assert f"pool {T4}: 2 machine(s) VM-hours 3.000 GPU-hours 3.000 1.5800 USD" in " ".join(
        text.split()
    )
    assert "tasks used 50% of the pool's 3.000 GPU-hours" in text
