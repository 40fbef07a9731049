"""The coordinator's caches hold a partition's whole active set: a sweep over it reads no state and
no definition again (issue 22); the LRU under them is bounded by weight (estimated bytes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared.coordinator import Coordinator
from shared.lru import Lru
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from tests.coordinator.faults import FaultPlan, faulty
from tests.coordinator.helpers import FakeClock, diamond, fast_options, submit

NAMES = ResourceNames("mem")


async def test_a_sweep_over_a_large_active_set_reads_no_state_or_definition_again() -> None:
    # Before: 256 cached states and 512 definitions; with more active workflows than that, every
    # sweep (and every event, in no useful order) read the state and the definition again.
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    wf = diamond()
    for i in range(600):
        await submit(storage, wf, f"w{i:04d}", clock())
    plan = FaultPlan(only={"workflows.read_state", "workflows.read_definition"})
    coord = Coordinator(faulty(storage, plan), NAMES, fast_options(), clock=clock, hold_lease=True)
    while (await coord.run_once()).stats.events_received:
        pass
    assert plan.calls.count("workflows.read_state") == 600  # each state read once, when activated
    plan.calls.clear()
    result = await coord.run_once(sweep=True)
    assert result.stats.sweep["engine"] == 600
    assert plan.calls == []


def test_an_lru_keeps_its_weight_bound_and_drops_an_entry_heavier_than_it() -> None:
    lru: Lru[str, int] = Lru(10, weigh=lambda value: value)
    lru.put("a", 4)
    lru.put("b", 4)
    lru.get("a")  # "b" is now the least recently used
    lru.put("c", 4)
    assert (lru.get("b"), lru.get("a"), lru.get("c"), lru.weight) == (None, 4, 4, 8)
    lru.put("a", 11)  # heavier than the whole cache: not kept, and its old value is gone
    assert (lru.get("a"), lru.weight, len(lru)) == (None, 4, 1)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 12)), max_size=60))
def test_an_lru_never_holds_more_than_its_capacity(puts: list[tuple[int, int]]) -> None:
    lru: Lru[int, int] = Lru(25, weigh=lambda value: value)
    for key, weight in puts:
        lru.put(key, weight)
        assert lru.weight <= 25
        assert lru.get(key) == weight  # the entry just put is kept (none is heavier than 25)
    held = [lru.get(key) for key in {key for key, _ in puts}]
    assert lru.weight == sum(value for value in held if value is not None)
