"""The cost of a run, from its definition and state (pure): every attempt the state remembers
counts its run time x GPUs (or slots) x its queue's price and its queue wait; a result reused from
the cache costs nothing and counts as saved; the price table comes from DAGQ_PRICES (a file or
inline JSON) with errors that say where."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.caching.entry import CachedFrom
from shared.cost.model import workflow_cost
from shared.cost.prices import DEFAULT_PRICES, PriceTable, QueuePrice, load_prices
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.attempt_history import PastAttempt
from shared.engine.state import COMPLETED, FAILED, RuntimeState
from shared.errors import ConfigError

T0 = 1_800_000_000_000  # ms
PRICES = PriceTable(
    queues={"gpu": QueuePrice(gpus=1, gpu_hour=3.0), "cpu": QueuePrice(slot_hour=0.5)}
)


def workflow() -> CompiledWorkflow:
    return CompiledWorkflow.of(
        "p",
        [
            TaskDef(name="prep", cmd="prep", queue="cpu"),
            TaskDef(name="train", cmd="train", queue="gpu", parents=(0,), gpus=2),
            TaskDef(name="eval", cmd="eval", queue="gpu", parents=(1,)),
        ],
    )


def ran(state: RuntimeState, i: int, queued_s: float, started_s: float, finished_s: float) -> None:
    state.attempt[i] = max(state.attempt[i], 1)
    state.queued_ms[i] = T0 + round(queued_s * 1000)
    state.started_ms[i] = T0 + round(started_s * 1000)
    state.finished_ms[i] = T0 + round(finished_s * 1000)
    state.codes[i] = COMPLETED


def test_attempts_count_gpus_slots_queue_wait_and_earlier_attempts() -> None:
    state = RuntimeState("w1", 3, T0 / 1000)
    ran(state, 0, 0, 60, 60 + 1800)  # half an hour of CPU after a minute's wait
    ran(state, 1, 0, 0, 3600)  # one hour on 2 GPUs (the task's own gpus) ...
    state.attempt[1] = 2
    state.history[1] = [PastAttempt(1, FAILED, T0, T0, T0 + 1_800_000, 1, "boom", "w", True)]
    ran(state, 2, 0, 0, 0)
    cost = workflow_cost(workflow(), state, PRICES, now=T0 / 1000 + 7200)
    prep, train, _ = cost.tasks
    assert (prep.cpu_hours, prep.gpu_hours, prep.wait_s) == (0.5, 0.0, 60.0)
    assert prep.estimated_cost == pytest.approx(0.25)
    # ... plus the failed first attempt's half hour: 1.5 h x 2 GPUs x 3.0.
    assert (train.gpus, train.attempts, train.gpu_hours) == (2, 2, 3.0)
    assert train.estimated_cost == pytest.approx(9.0)
    assert cost.gpu_hours == 3.0
    assert cost.cpu_hours == 0.5
    assert cost.compute_cost == pytest.approx(9.25)
    assert cost.storage_requests > 0
    assert cost.estimated_cost == pytest.approx(cost.compute_cost + cost.storage_cost)


def test_a_running_attempt_counts_until_now_and_a_cached_one_is_saved() -> None:
    state = RuntimeState("w2", 3, T0 / 1000)
    ran(state, 0, 0, 0, 0)
    state.started_ms[1], state.finished_ms[1] = T0, None  # running for 30 minutes at "now"
    ran(state, 2, 10, 10, 10)
    state.note_cached(2, CachedFrom(workflow_id="w1", task="eval", attempt=1, run_s=7200))
    cost = workflow_cost(workflow(), state, PRICES, now=T0 / 1000 + 1800)
    _, train, evaluate = cost.tasks
    assert train.gpu_hours == 1.0  # 0.5 h x 2 GPUs
    assert (evaluate.attempts, evaluate.gpu_hours, evaluate.estimated_cost) == (0, 0.0, 0.0)
    assert evaluate.cached_from is not None
    assert evaluate.cached_saved_hours == 2.0  # 2 h on the queue's 1 GPU
    assert cost.cached_saved_hours == 2.0
    assert cost.cached_saved_cost == pytest.approx(6.0)


def test_prices_from_a_file_inline_json_or_the_defaults(tmp_path: Path) -> None:
    assert load_prices(None) == DEFAULT_PRICES
    path = tmp_path / "prices.yaml"
    path.write_text("currency: EUR\nqueues:\n  a100: {gpus: 1, gpu_hour: 3.67}\n")
    table = load_prices(str(path))
    assert (table.currency, table.of("a100").gpu_hour, table.of("other")) == (
        "EUR", 3.67, DEFAULT_PRICES.default
    )  # fmt: skip
    assert load_prices('{"storage": {"per_10k_requests": 0.004}}').storage.per_10k_requests == 0.004


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ('{"queues": {"gpu": {"gpu_hour": -1}}}', "queues.gpu.gpu_hour"),
        ('{"queue": {}}', "queue"),
        ("{not json", "not valid JSON"),
        ("/nonexistent/prices.yaml", "cannot read"),
    ],
)
def test_a_bad_price_table_says_what_and_where(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_prices(spec)


def test_the_default_gpu_price_follows_the_pool_vm_size() -> None:
    # The old default (3.06 per GPU-hour) was an NCv3 (V100) price, a size Azure retired on
    # 2025-09-30. The default now is the deployment's pool size (DAGQ_GPU_VM_SKU), per GPU.
    from shared.cost.prices import DEFAULT_VM_SKU, VM_SIZES

    assert DEFAULT_VM_SKU == "Standard_NC4as_T4_v3"  # gpu-vmss.bicep's default vmSku
    t4 = load_prices(None)
    assert t4.of("gpu").gpu_hour == VM_SIZES[DEFAULT_VM_SKU].hour_price  # 1 GPU per VM
    assert t4.of("gpu").gpu_hour != 3.06
    a100x4 = load_prices(None, vm_sku="Standard_NC96ads_A100_v4")
    assert a100x4.of("gpu").gpu_hour == pytest.approx(
        VM_SIZES["Standard_NC96ads_A100_v4"].hour_price / 4
    )
    # An unknown size falls back to the default pool's price; a price file always wins.
    assert load_prices(None, vm_sku="Standard_XYZ").of("gpu") == t4.of("gpu")
    assert (
        load_prices(
            '{"queues": {"gpu": {"gpus": 1, "gpu_hour": 2.5}}}', vm_sku="Standard_NC96ads_A100_v4"
        )
        .of("gpu")
        .gpu_hour
        == 2.5
    )
    assert QueuePrice().gpu_hour == t4.of("gpu").gpu_hour
