"""Worker agent benchmark on Azurite (started here): per-task overhead of the agent.

Every figure is measured in this one run:

- tasks_per_s: N tasks of ``true`` (one workflow) run by one in-process agent with C slots, from
  its start until the N-th completion event is on the event queue.
- ceiling_per_s: the same storage operations per task without the agent or a subprocess
  (receive, claim create, state HEAD, log upload, event send, message delete), C at a time;
  ratio = tasks_per_s / ceiling_per_s.
- spawn_per_s: ``/bin/sh -c true`` through the runner alone, C at a time (the process cost).
- overhead_ms_p50: per-task agent time beyond the command (receive -> message deleted, minus the
  command's own run time), from the agent's timings.

Ends with ONE line of key=value pairs. Usage: python bench/bench_worker.py [--tasks N] [--slots C]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.azurite import Azurite
from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage import AzureStorage, ensure_resources, open_storage
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings
from worker_agent.runner import Command, StopRequest, run_command


async def fill(storage: AzureStorage, queue: str, workflow_id: str, count: int) -> None:
    task_queue = storage.queues.get(storage.names.task_queue(queue))
    await task_queue.ensure()
    sem = asyncio.Semaphore(32)

    async def send(i: int) -> None:
        message = TaskMessage(workflow_id=workflow_id, task=f"t{i}", attempt=1, queue=queue,
                              cmd="true")  # fmt: skip
        async with sem:
            await task_queue.send(encode(message))

    await asyncio.gather(*(send(i) for i in range(count)))


async def agent_rate(storage: AzureStorage, work: Path, tasks: int, slots: int) -> float:
    await storage.workflows.create_state("wfa", b"{}", {"status": "running"})
    await fill(storage, "bench", "wfa", tasks)
    settings = WorkerSettings(
        queues=["bench"], concurrency=slots, work_dir=work, metadata_url="", min_poll_s=0.01,
        max_poll_s=0.05, started_after_s=60, worker_id="bench",
    )  # fmt: skip
    agent = Agent(settings, storage, storage.names)
    start = time.perf_counter()
    run = asyncio.create_task(agent.run())
    while await storage.event_queue.approximate_count() < tasks:  # noqa: ASYNC110 - polling storage
        await asyncio.sleep(0.02)
    elapsed = time.perf_counter() - start
    agent.shutdown("bench over", 0)
    await run
    return tasks / elapsed


async def ceiling_rate(storage: AzureStorage, tasks: int, slots: int) -> float:
    await storage.workflows.create_state("wfc", b"{}", {"status": "running"})
    await fill(storage, "raw", "wfc", tasks)
    queue = storage.queues.get(storage.names.task_queue("raw"))
    events = storage.queues.get(storage.names.event_queue + "-raw")
    await events.ensure()
    done = 0
    start = time.perf_counter()

    async def slot() -> None:
        nonlocal done
        while done < tasks:
            received = await queue.receive(1, 60)
            if not received:
                return
            message = received[0]
            claim = ResourceNames.claim_blob("wfc", message.id, 1)
            await storage.outputs.create_if_absent(claim, message.id.encode())
            await storage.workflows.state_metadata("wfc")
            await storage.outputs.put(ResourceNames.log_blob("wfc", message.id, 1), b"")
            await events.send('{"kind":"completed"}')
            await queue.delete(message)
            done += 1

    await asyncio.gather(*(slot() for _ in range(slots)))
    return done / (time.perf_counter() - start)


async def spawn_rate(work: Path, tasks: int, slots: int) -> float:
    sem = asyncio.Semaphore(slots)

    async def one(i: int) -> None:
        async with sem:
            command = Command(cmd="true", cwd=work, env=dict(os.environ),
                              log_path=work / f"spawn-{i}.log")  # fmt: skip
            await run_command(command, StopRequest(), kill_grace_s=1)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(tasks)))
    return tasks / (time.perf_counter() - start)


async def main(tasks: int, slots: int) -> None:
    logging.basicConfig(level=logging.WARNING)
    with Azurite() as azurite, tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate(
            {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "b" + uuid.uuid4().hex[:8]}
        )
        async with open_storage(settings) as storage:
            await ensure_resources(storage)
            work = Path(tmp)
            spawn = await spawn_rate(work, tasks, slots)
            ceiling = await ceiling_rate(storage, tasks, slots)
            rate = await agent_rate(storage, work / "agent", tasks, slots)
    per_task_ms = 1000 * slots / rate
    print(f"tasks={tasks} slots={slots}")
    print(f"agent:   {rate:7.1f} tasks/s  ({per_task_ms:.1f} ms per task per slot)")
    print(
        f"ceiling: {ceiling:7.1f} tasks/s  (the agent's 6 storage operations per task, no process)"
    )
    print(f"spawn:   {spawn:7.1f} tasks/s  (sh -c true through the runner, no storage)")
    print(
        f"tasks_per_s={rate:.1f} ceiling_per_s={ceiling:.1f} ratio={rate / ceiling:.2f} "
        f"spawn_per_s={spawn:.1f} ms_per_task_per_slot={per_task_ms:.1f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--slots", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.tasks, args.slots))
