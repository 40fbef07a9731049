"""Partitioned coordination under Azure's modelled latency and limits (in memory, one process).

Every figure is measured in this one run, on ``shared.storage.modelled`` over the in-memory storage
(per-operation latencies, ~2,000 messages/s per queue, ~20,000 requests/s per account, ~500
requests/s per blob; docs/capacity.md), run ``--slowdown`` times slower so that this machine's CPU
is not what limits eight partitions (rates are multiplied back by it):

- completions_per_s_p{P} for P = 1, 2, 4, 8: ``--instances`` coordinator processes (each a
  ``PartitionSet`` serving every partition, with its own leases and caches) hold the P leases; then
  ``--per-partition`` leaf completions per partition (fan-outs whose leaves are running) are put
  on the event queues at once and drained; the rate is completions / drain time.
- scaling_efficiency_p8 = completions_per_s_p8 / (8 x completions_per_s_p1).
- flushes_per_completion (P = 8): state blob writes per applied completion.
- lease_handovers: lease acquisitions beyond one per partition during the runs above.
- bounce_rate: Functions-shaped run at the model's real speed: ``--instances`` app instances, each
  with one queue trigger per partition (2 partitions; host.json's batchSize 1, one invocation at a
  time, 0.5 s polling) and a coordinator per partition that keeps its lease while busy and waits
  briefly for a lease held elsewhere; synthetic workers run 8 fan-outs of 150 tasks. Bounces
  (trigger events handed back to the queue) / events. bounce_rate_release_each_pass: the same with
  the previous design (lease released after every pass, no wait).
- Under the platform's scale controller (bench/scale_controller.py: instances = queue length /
  batchSize, up to maximumInstanceCount, re-evaluated every ``--cadence-s``), for each maximum M in
  ``--max-instances``: sc_bounce_rate_mM (bounced / applied events), sc_billed_s_per_1000_mM
  (billed execution seconds per 1,000 completions), sc_peak_instances_mM and sc_elapsed_s_mM;
  recommended_max_instances is the smallest M whose run is within 10 % of the fastest one.

Ends with ONE line of key=value pairs. Usage: python bench/bench_partitions.py [--slowdown 10]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.modelled_stack import FunctionsInstance, fan, queues_empty, stage_running_leaves
from bench.scale_controller import PartitionFunction, run_controller
from devtools.testing.partition_ids import ids_in_each_partition as ids_for
from devtools.testing.synthetic_worker import SyntheticWorker
from shared.coordinator import CoordinatorOptions
from shared.coordinator.process import PartitionSet
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from shared.storage.modelled import AzureModel, StorageModel, modelled
from shared.storage.ports import Storage

NAMES = ResourceNames("bench")


async def drain_rate(
    partitions: int, instances: int, per_partition: int, slowdown: float
) -> tuple[float, float, int]:
    """(Azure completions/s, flushes per completion, lease hand-overs) for ``partitions``."""
    base = memory_storage("bench")
    model = StorageModel(AzureModel(slowdown=slowdown))
    storage = modelled(base, model)
    options = CoordinatorOptions(lease_s=60, pass_budget_s=20.0, event_visibility_s=300)
    sets = [PartitionSet(storage, NAMES, options, range(partitions)) for _ in range(instances)]
    stop = asyncio.Event()
    runs = [asyncio.create_task(s.run(stop, wait_for_lease=True, sweep_every_s=3600))
            for s in sets]  # fmt: skip
    while sum(len(s.held()) for s in sets) < partitions:  # noqa: ASYNC110 - leases are storage
        await asyncio.sleep(0.05)
    leaves = 250
    wf = fan(leaves)
    events: dict[int, list[str]] = {}
    for p, wids in ids_for(partitions, per_partition // leaves, f"p{partitions}w").items():
        events[p] = [e for wid in wids for e in await stage_running_leaves(base, wf, wid, p)]
    writes_before = model.stats.calls["workflows.write_state"]
    start = time.perf_counter()
    for p, texts in events.items():
        queue = base.for_partition(p).event_queue
        for text in texts:
            await queue.send(text)
    while not await queues_empty(base, partitions):  # noqa: ASYNC110 - queues are storage
        await asyncio.sleep(0.02)
    elapsed = time.perf_counter() - start
    stop.set()
    await asyncio.gather(*runs)
    completions = sum(len(texts) for texts in events.values())
    flushes = model.stats.calls["workflows.write_state"] - writes_before
    acquired = sum(c.leadership.acquisitions for s in sets for c in s.coordinators.values())
    return completions / elapsed * slowdown, flushes / completions, acquired - partitions


async def run_fanouts(
    storage: Storage, stop: asyncio.Event, jobs: list[asyncio.Task[None]], prefix: str
) -> tuple[list[str], int, float]:
    """Two synthetic workers run 8 fan-outs of 150 tasks over 2 partitions beside ``jobs`` (the
    coordinators); then ``stop`` and wait. (workflow ids, tasks per workflow, seconds until every
    task ran.)"""
    from shared.api import service

    workers = [SyntheticWorker(storage, NAMES, ["cpu"], concurrency=16, worker_id=f"w{i}")
               for i in range(2)]  # fmt: skip
    jobs = jobs + [asyncio.create_task(w.run(stop)) for w in workers]
    wf = fan(150)
    ids = [wid for wids in ids_for(2, 4, prefix).values() for wid in wids]
    start = time.perf_counter()
    for wid in ids:
        await service.submit(storage, wf, now=time.time(), workflow_id=wid, partitions=2)
    deadline = time.monotonic() + 300
    while sum(w.executions.total() for w in workers) < len(ids) * len(wf.tasks):
        if time.monotonic() > deadline:
            raise SystemExit(f"the {prefix} run did not finish")
        await asyncio.sleep(0.1)
    elapsed = time.perf_counter() - start
    await asyncio.sleep(1.0)  # the last completions are applied
    stop.set()
    await asyncio.gather(*jobs)
    return ids, len(wf.tasks), elapsed


async def bounce_rate(instances: int, keep_lease: bool) -> tuple[float, int]:
    """(bounces / events, events) of a Functions-shaped run with 2 partitions, at the model's real
    speed (the host's polling and the lease waits run in real time, so slowing the storage down
    would inflate the bounce rate)."""
    base = memory_storage("bench")
    storage = modelled(base, StorageModel(AzureModel()))
    options = CoordinatorOptions(lease_s=15)
    if not keep_lease:
        options = CoordinatorOptions(lease_s=15, lease_wait_s=0.0)
    hosts = [FunctionsInstance(storage, NAMES, 2, options, keep_lease) for _ in range(instances)]
    stop = asyncio.Event()
    jobs = [asyncio.create_task(h.run(stop)) for h in hosts]
    ids, tasks, _ = await run_fanouts(storage, stop, jobs, f"b{int(keep_lease)}w")
    bounces = sum(c.bounces for h in hosts for c in h.coordinators)
    events = len(ids) * (tasks + 1)  # a completion per task and an activate
    return bounces / events, events


async def under_scale_controller(max_instances: int, cadence_s: float) -> dict[str, float]:
    """The bounce_rate run (2 partitions, 8 fan-outs of 150 tasks, real speed) with instances
    started and stopped by the modelled scale controller instead of a fixed count."""
    base = memory_storage("bench")
    storage = modelled(base, StorageModel(AzureModel()))
    options = CoordinatorOptions(lease_s=15)
    functions = [PartitionFunction(storage, NAMES, p, options, max_instances) for p in range(2)]
    stop = asyncio.Event()
    jobs = [asyncio.create_task(run_controller(functions, stop, cadence_s))]
    ids, tasks, elapsed = await run_fanouts(storage, stop, jobs, f"sc{max_instances}w")
    events = len(ids) * (tasks + 1)
    billed = sum(f.billing.executing_s for f in functions)
    return {
        "bounce_rate": sum(f.bounces for f in functions) / events,
        "billed_s_per_1000": billed / (len(ids) * tasks) * 1000,
        "peak_instances": max(f.billing.peak_instances for f in functions),
        "elapsed_s": elapsed,
    }


async def scale_controller_figures(maxima: list[int], cadence_s: float) -> str:
    """key=value figures of the scale-controller runs, and the recommended maximum."""
    runs = {m: await under_scale_controller(m, cadence_s) for m in maxima}
    for m, run in runs.items():
        print(f"maximumInstanceCount={m}: bounce rate {run['bounce_rate']:.4f}, "
              f"{run['billed_s_per_1000']:.0f} billed s per 1,000 completions, "
              f"peak {run['peak_instances']:.0f} instances per partition, "
              f"{run['elapsed_s']:.1f} s")  # fmt: skip
    fastest = min(run["elapsed_s"] for run in runs.values())
    recommended = min(m for m, run in runs.items() if run["elapsed_s"] <= 1.1 * fastest)
    figures = [
        f"sc_{key}_m{m}={value:.4f}" if key == "bounce_rate" else f"sc_{key}_m{m}={value:.1f}"
        for m, run in runs.items()
        for key, value in run.items()
    ]
    return " ".join(figures) + f" recommended_max_instances={recommended} cadence_s={cadence_s:g}"


async def main(
    slowdown: float, instances: int, per_partition: int, maxima: list[int], cadence_s: float
) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("dagq.coordinator").setLevel(logging.ERROR)
    rates: dict[int, float] = {}
    flushes = 0.0
    handovers = 0
    for partitions in (1, 2, 4, 8):
        rate, flushes, moved = await drain_rate(partitions, instances, per_partition, slowdown)
        rates[partitions] = rate
        handovers += moved
        print(f"P={partitions}: {rate:8.0f} completions/s (modelled Azure), "
              f"{flushes:.3f} flushes per completion, {moved} lease hand-overs")  # fmt: skip
    efficiency = rates[8] / (8 * rates[1])
    bounces, events = await bounce_rate(instances, keep_lease=True)
    before, _ = await bounce_rate(instances, keep_lease=False)
    controller = await scale_controller_figures(maxima, cadence_s)
    print(f"scaling efficiency at P=8: {efficiency:.2f} of linear")
    print(f"bounce rate: {bounces:.4f} of {events} events ({instances} instances, 2 partitions); "
          f"releasing the lease after every pass: {before:.4f}")  # fmt: skip
    figures = " ".join(f"completions_per_s_p{p}={r:.0f}" for p, r in rates.items())
    print(
        f"{figures} scaling_efficiency_p8={efficiency:.2f} flushes_per_completion={flushes:.3f} "
        f"lease_handovers={handovers} bounce_rate={bounces:.4f} "
        f"bounce_rate_release_each_pass={before:.4f} instances={instances} slowdown={slowdown:g} "
        f"{controller}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowdown", type=float, default=10.0)
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--per-partition", type=int, default=1000)
    parser.add_argument("--max-instances", type=int, nargs="+", default=[1, 2, 4, 16])
    parser.add_argument("--cadence-s", type=float, default=1.0)
    parser.add_argument("--only-scale-controller", action="store_true")
    args = parser.parse_args()
    if args.only_scale_controller:
        print(asyncio.run(scale_controller_figures(args.max_instances, args.cadence_s)))
    else:
        asyncio.run(
            main(args.slowdown, args.instances, args.per_partition, args.max_instances,
                 args.cadence_s)
        )  # fmt: skip
