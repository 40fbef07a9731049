"""10,000 small workflows at once, under Azure's modelled latency and limits (in memory).

Submits ``--workflows`` workflows of ``--width`` + 2 tasks (a root, ``--width`` parallel tasks, a
sink; 5 tasks by default, so the run stays within a couple of minutes) through the API's submit,
all at once, to a deployment with ``--partitions`` partitions served by two coordinator processes
(``PartitionSet``s, sweeping every 5 s as the long-lived process does) and synthetic workers on 8
task queues, everything on ``shared.storage.modelled`` at real speed (docs/capacity.md). Fails if
no task completes for 60 s (a stall).

Ends with ONE line of key=value pairs: concurrent_10k_workflows_s (first submit -> last workflow
completed), tasks_per_s, submit_s, the storage requests per task the model counted
(requests_per_task) and their breakdown by operation (requests_breakdown: ``port.method`` or
``events|tasks.method`` for the event and task queues, requests per task each, largest first).

events_per_message: how many events each event message carried (the workers' reports ready
together go as one message: ``worker_agent.outbox``).

requests_per_task_real adds what real workers cost beside the synthetic ones (which claim, run
nothing and report a completion), for a ``--task-s`` (60) second task on a worker of one slot with
the worker's default settings, each figure per task (real_breakdown): the state check before the
run, the report sent alone (a one-slot worker's report has no company: the synthetic run's
batching taken back), the started event (its send, the coordinator's delete, and its share of
event receives and state writes at this run's measured rate per event), the message's
visibility heartbeats, the cancel checks, the live log (its creation, its appends of a task that
writes steadily, and the final append), and the registry beats made while the task runs (its
progress rides them). Each count comes from the worker's own cadence functions
(``worker_agent/cadence.py``) and settings.
Usage: python bench/bench_concurrent.py [--workflows 10000] [--task-s 60]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.testing.synthetic_worker import SyntheticWorker
from shared.api import service
from shared.coordinator import CoordinatorOptions
from shared.coordinator.process import PartitionSet
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from shared.storage.modelled import AzureModel, StorageModel, modelled

NAMES = ResourceNames("bench")
QUEUES = [f"q{i}" for i in range(8)]
STALL_S = 60.0


def small(width: int, queue: str) -> CompiledWorkflow:
    tasks = [TaskDef(name="root", cmd="true", queue=queue)]
    tasks += [TaskDef(name=f"t{i}", cmd="true", queue=queue, parents=(0,)) for i in range(width)]
    tasks.append(TaskDef(name="sink", cmd="true", queue=queue, parents=tuple(range(1, width + 1))))
    return CompiledWorkflow.of("small", tasks)


async def main(workflows: int, width: int, partitions: int, task_s: float) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("dagq.coordinator").setLevel(
        logging.INFO if "-v" in sys.argv else logging.ERROR
    )
    model = StorageModel(AzureModel(), queue_kind=NAMES.queue_kind)
    storage = modelled(memory_storage("bench"), model)
    options = CoordinatorOptions(lease_s=60)
    sets = [PartitionSet(storage, NAMES, options, range(partitions)) for _ in range(2)]
    workers = [SyntheticWorker(storage, NAMES, QUEUES, concurrency=64, claim=True,
                               worker_id=f"w{i}") for i in range(4)]  # fmt: skip
    stop = asyncio.Event()
    jobs = [asyncio.create_task(s.run(stop, wait_for_lease=True, sweep_every_s=5.0)) for s in sets]
    jobs += [asyncio.create_task(w.run(stop)) for w in workers]
    definitions = [small(width, q) for q in QUEUES]
    total_tasks = workflows * (width + 2)
    slots = asyncio.Semaphore(256)

    async def submit(i: int) -> None:
        async with slots:
            wf = definitions[i % len(definitions)]
            await service.submit(storage, wf, now=time.time(), workflow_id=f"c{i:06d}",
                                 partitions=partitions, names=NAMES)  # fmt: skip

    start = time.perf_counter()
    await asyncio.gather(*(submit(i) for i in range(workflows)))
    submit_s = time.perf_counter() - start
    print(f"submitted {workflows} workflows in {submit_s:.1f} s", flush=True)
    last, last_change = 0, time.monotonic()
    while (ran := sum(w.executions.total() for w in workers)) < total_tasks:
        if ran != last:
            last, last_change = ran, time.monotonic()
        elif time.monotonic() - last_change > STALL_S:
            raise SystemExit(f"stalled: {ran} of {total_tasks} tasks ran, none for {STALL_S:.0f} s")
        await asyncio.sleep(0.5)
    unfinished = workflows
    while unfinished:  # the last completions are applied and the workflows finish
        rows = await storage.base.index.active()
        unfinished = len(rows)
        if time.monotonic() - last_change > STALL_S:
            raise SystemExit(f"stalled: {unfinished} workflows never finished")
        await asyncio.sleep(0.5)
    elapsed = time.perf_counter() - start
    stop.set()
    await asyncio.gather(*jobs)
    duplicates = max(max(w.executions.values()) for w in workers)
    requests = model.stats.total() / total_tasks
    busiest = ", ".join(f"{k} {v}" for k, v in model.stats.throttled.most_common(4))
    print(f"calls that waited for a rate limit: {busiest or 'none'}")
    rate = total_tasks / elapsed
    print(f"{workflows} workflows ({total_tasks} tasks) completed in {elapsed:.1f} s: "
          f"{rate:.0f} tasks/s, {requests:.1f} storage requests per task")  # fmt: skip
    breakdown = requests_breakdown(model.stats.calls, total_tasks)
    for label, per_task in breakdown:
        print(f"  {label:32} {per_task:6.2f} requests per task")
    real = real_worker_extras(dict(breakdown), task_s)
    real_total = requests + sum(per_task for _, per_task in real)
    print(f"with real workers ({task_s:g} s tasks): {real_total:.1f} storage requests per task")
    for label, per_task in real:
        print(f"  {label:32} {per_task:6.2f} requests per task")
    print(
        f"concurrent_10k_workflows_s={elapsed:.1f} workflows={workflows} tasks={total_tasks} "
        f"tasks_per_s={rate:.0f} submit_s={submit_s:.1f} requests_per_task={requests:.2f} "
        f"partitions={partitions} max_runs_per_attempt={duplicates} "
        f"events_per_message={1 / max(model.stats.calls['events.send'] / total_tasks, 1e-9):.2f} "
        "requests_breakdown="
        + ",".join(f"{label}:{per_task:.2f}" for label, per_task in breakdown)
        + f" requests_per_task_real={real_total:.2f} real_task_s={task_s:g} real_breakdown="
        + ",".join(f"{label}:{per_task:.2f}" for label, per_task in real)
    )


def requests_breakdown(calls: Counter[str], tasks: int) -> list[tuple[str, float]]:
    """(operation, requests per task), largest first: where the storage requests go."""
    return [(label, count / tasks) for label, count in calls.most_common() if count]


def real_worker_extras(measured: dict[str, float], task_s: float) -> list[tuple[str, float]]:
    """Requests per task a real worker (default settings, one slot) adds to the synthetic ones
    for a ``task_s`` second task that logs and reports progress steadily (see the docstring):
    each cadence is the worker's own (``worker_agent.cadence``), counted over the task's run."""
    from worker_agent.cadence import (
        cancel_check_interval,
        heartbeat_schedule,
        live_interval,
        progress_interval,
        ticks_within,
    )
    from worker_agent.config import WorkerSettings

    worker = WorkerSettings(queues=["q"])
    # Each task reports one event here; the synthetic workers' events went in batches of
    # 1 / events.send. A one-slot worker's report of a 60 s task travels alone.
    messages = measured.get("events.send", 1.0)
    started = 1.0 if task_s >= worker.started_after_s else 0.0
    return [
        ("worker.state_check", 1.0),  # the HEAD after the claim, before the run
        ("report.events.send_alone", 1.0 - messages),
        ("report.events.delete_alone", 1.0 - measured.get("events.delete", 1.0)),
        ("started.events.send", started),
        ("started.events.delete", started),
        ("started.events.receive", started * measured.get("events.receive", 0.0) / messages),
        ("started.workflows.write_state", started * measured.get("workflows.write_state", 0.0)),
        ("tasks.extend", ticks_within(lambda a: heartbeat_schedule(worker, a)[1], task_s)),
        ("worker.cancel_checks", ticks_within(lambda a: cancel_check_interval(worker, a), task_s)),
        # the live ticks (the first creates the blob) and the final append of the rest
        ("outputs.append_log", 1.0 + ticks_within(lambda a: live_interval(worker, a), task_s)),
        ("registry.beat", ticks_within(lambda _age: progress_interval(worker), task_s)),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--task-s", type=float, default=60.0,
                        help="task duration for requests_per_task_real")  # fmt: skip
    args = parser.parse_args()
    asyncio.run(main(args.workflows, args.width, args.partitions, args.task_s))
