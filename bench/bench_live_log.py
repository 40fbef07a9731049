"""Live log benchmark on Azurite (started here): the storage writes a running task's log costs.

A worker agent (in-process, ``--live-s`` and ``--live-max-s`` set to ``--live-s`` here: a fixed
interval, as a young task's) runs one task that prints a line every 0.1 s for ``--seconds``. (Past
its first intervals a task's appends slow down with its age, up to ``--live-max-s``: that cadence
is counted by ``bench_concurrent.py``'s real-worker figures.) Every write to its log blob is
counted (creation, appends, the final part). Measured in this one run:

- log_writes_per_interval: writes / (task run time / live_s): how many writes each live interval
  cost (the design: at most one, plus the creation and the final append once per attempt);
- log_writes_per_attempt_minute: the same at the default ``--live-s`` of 5 s, per minute of a
  running attempt (yardstick: 12, one per 5 s);
- log_lag_s_max: the longest a printed line took to reach storage while the task ran;
- heartbeat_progress_chars_max: the largest progress a worker record can carry (100 tasks, each
  with the most metrics of the longest names), against its bound MAX_PROGRESS_CHARS.

Ends with ONE line of key=value pairs. Usage: python bench/bench_live_log.py [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.azurite import Azurite
from shared.limits import MAX_METRIC_NAME, MAX_METRICS, MAX_PROGRESS_CHARS, MAX_RECORD_TASKS
from shared.messages import TaskMessage, encode
from shared.progress import TaskProgress
from shared.settings import Settings
from shared.storage import AzureStorage, ensure_resources, open_storage
from shared.storage.registry import WorkerTask, progress_text
from worker_agent.agent import Agent
from worker_agent.config import WorkerSettings

DEFAULT_LIVE_S = WorkerSettings.model_fields["live_s"].default


class CountingOutputs:
    """The outputs port, counting writes to one blob and when its size grew."""

    def __init__(self, target: Any, name: str) -> None:
        self.target = target
        self.name = name
        self.writes = 0

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.target, attr)

    async def append(self, name: str, data: bytes, **kw: Any) -> None:
        self.writes += name == self.name
        await self.target.append(name, data, **kw)

    async def put(self, name: str, data: bytes, **kw: Any) -> None:
        self.writes += name == self.name
        await self.target.put(name, data, **kw)


async def run(storage: AzureStorage, work: Path, seconds: float, live_s: float) -> dict[str, float]:
    blob = storage.names.log_blob("wf-bench", "chatty", 1)
    counting = CountingOutputs(storage.outputs, blob)
    storage = dataclasses.replace(storage, outputs=counting)
    await storage.workflows.create_state("wf-bench", b"{}", {"status": "running"})
    lines = int(seconds * 10)
    cmd = f'for i in $(seq 1 {lines}); do echo "line $i $(date +%s.%N)"; sleep 0.1; done'
    queue = storage.queues.get(storage.names.task_queue("bench"))
    await queue.ensure()
    message = TaskMessage(workflow_id="wf-bench", task="chatty", attempt=1, queue="bench", cmd=cmd)
    await queue.send(encode(message))
    settings = WorkerSettings(
        queues=["bench"], work_dir=work, metadata_url="", live_s=live_s, live_max_s=live_s,
        min_poll_s=0.05, max_poll_s=0.1, worker_id="bench", registry_s=60,
    )  # fmt: skip
    agent = Agent(settings, storage, storage.names)
    runner = asyncio.create_task(agent.run())
    lag = 0.0
    started = time.time()
    done = False
    stamps: list[float] = []
    while not done:
        await asyncio.sleep(0.25)
        try:
            data, _ = await counting.target.read_range(blob, 0, 1 << 24)
        except Exception:
            data = b""
        stamps = [float(line.split()[-1]) for line in data.decode().splitlines() if line]
        if stamps and len(stamps) < lines:
            lag = max(lag, time.time() - stamps[-1] - 0.1)  # the next line was printed by now
        done = len(stamps) >= lines or time.time() - started > seconds + 60
    ran = stamps[-1] - stamps[0] + 0.1 if stamps else time.time() - started  # the task's own run
    agent.shutdown("bench over", 0.0)
    await runner
    per_interval = counting.writes / (ran / live_s)
    return {"writes": counting.writes, "ran_s": ran, "per_interval": per_interval, "lag": lag}


def heartbeat_chars() -> int:
    metrics = {
        f"{'m' * (MAX_METRIC_NAME - 2)}{i:02d}": -1.2345678901234567e-300
        for i in range(MAX_METRICS)
    }
    tasks = [
        WorkerTask("w" * 64, "t" * 128, 2**32 - 1, TaskProgress(0.123456789, metrics))
        for _ in range(MAX_RECORD_TASKS)
    ]
    return len(progress_text(tasks))


async def main(seconds: float, live_s: float) -> None:
    with Azurite() as azurite, tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate(
            {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "l" + uuid.uuid4().hex[:8]}
        )
        async with open_storage(settings) as storage:
            await ensure_resources(storage)
            got = await run(storage, Path(tmp), seconds, live_s)
    per_minute = got["per_interval"] * 60 / DEFAULT_LIVE_S
    chars = heartbeat_chars()
    print(
        f"task printed for {got['ran_s']:.1f} s at --live-s {live_s:g}:"
        f" {got['writes']:.0f} log writes"
    )
    print(
        f"log_writes_per_interval={got['per_interval']:.2f}"
        f" log_writes_per_attempt_minute={per_minute:.1f}"
        f" log_write_yardstick_per_minute={60 / DEFAULT_LIVE_S:.0f}"
        f" log_lag_s_max={got['lag']:.1f}"
        f" heartbeat_progress_chars_max={chars} heartbeat_progress_bound={MAX_PROGRESS_CHARS}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="how long the task prints")
    parser.add_argument("--live-s", type=float, default=1.0, help="the agent's --live-s")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.live_s))
