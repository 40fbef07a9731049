"""Operations benchmark on Azurite: how long ``dagq doctor`` takes over many active workflows, and
how fast a bulk purge deletes finished ones (each with its definition, state, index row and a few
output blobs), end to end through the same functions the API runs.

Prints ONE line of key=value pairs:
  doctor_ms_N            one doctor run (GET /api/doctor's work) with N active workflows
  doctor_findings_N      findings it reported (every active workflow's task message is missing)
  purge_workflows        finished workflows purged by one `dagq purge --older-than` (all pages)
  purge_s, purge_per_s   wall time and workflows per second
  purge_blobs_each       output blobs deleted with each workflow
  leftovers              anything of a purged workflow still stored (must be 0)

Usage: .venv/bin/python bench/bench_ops.py [--quick]   (--quick: 50 active, 100 to purge)
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.azurite import Azurite
from shared import codec, engine
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.engine.projection import index_row
from shared.messages import ActivateEvent, CancelEvent
from shared.ops.doctor import doctor
from shared.ops.purge import purge_many
from shared.settings import Settings
from shared.storage import AzureStorage, ensure_resources, open_storage

DAY = 86400.0
BLOBS_EACH = 3


def diamond() -> CompiledWorkflow:
    def task(name: str, parents: tuple[int, ...] = ()) -> TaskDef:
        return TaskDef(name=name, cmd=f"echo {name}", queue="cpu", parents=parents)

    return CompiledWorkflow.of(
        "bench", [task("a"), task("b", (0,)), task("c", (0,)), task("d", (1, 2))]
    )


async def store(storage: AzureStorage, workflow_id: str, now: float, *, finished: bool) -> None:
    """A workflow as the API and coordinator leave it: running (a task queued) or cancelled."""
    wf = diamond()
    state = engine.new_state(wf, workflow_id, now)
    engine.apply(wf, state, ActivateEvent(workflow_id=workflow_id), now + 1)
    if finished:
        engine.apply(wf, state, CancelEvent(workflow_id=workflow_id), now + 2)
        for i in range(BLOBS_EACH):
            await storage.outputs.put(f"{workflow_id}/t{i}/1/log.txt", b"log")
    await storage.workflows.create_definition(workflow_id, codec.encode_definition(wf))
    await storage.workflows.create_state(
        workflow_id, codec.encode_state(state), codec.state_metadata(state)
    )
    await storage.index.create(index_row(wf, state))


async def in_batches(coros: list, size: int = 32) -> None:  # type: ignore[type-arg]
    for start in range(0, len(coros), size):
        await asyncio.gather(*coros[start : start + size])


async def run(active: int, finished: int) -> dict[str, float]:
    with Azurite() as azurite:
        env = {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "b" + uuid.uuid4().hex[:8]}
        settings = Settings.model_validate(env)
        async with open_storage(settings) as storage:
            await ensure_resources(storage)
            now = time.time()
            await in_batches(
                [store(storage, f"old-{i:05d}", now - 40 * DAY, finished=True)
                 for i in range(finished)]
                + [store(storage, f"run-{i:05d}", now - 600, finished=False)
                   for i in range(active)]
            )  # fmt: skip
            await storage.registry.mark("sweep", time.time())

            started = time.perf_counter()
            report = await doctor(storage, settings, now=time.time())
            doctor_ms = (time.perf_counter() - started) * 1000

            started = time.perf_counter()
            purged, token = 0, None
            while True:
                step = await purge_many(
                    storage, now=time.time(), older_than_s=30 * DAY, continuation=token
                )
                purged += len(step.workflows)
                token = step.next
                if token is None:
                    break
            purge_s = time.perf_counter() - started

            leftovers = len(await storage.workflows.purge_marks())
            leftovers += sum(
                1 for row in (await storage.index.list(limit=1000)).rows
                if row.workflow_id.startswith("old-")
            )  # fmt: skip
            leftovers += await storage.outputs.delete_prefix("old-")
    return {
        f"doctor_ms_{active}": round(doctor_ms, 1),
        f"doctor_findings_{active}": len(report.findings),
        "purge_workflows": purged,
        "purge_s": round(purge_s, 2),
        "purge_per_s": round(purged / purge_s, 1),
        "purge_blobs_each": BLOBS_EACH,
        "leftovers": leftovers,
    }


def main() -> None:
    quick = "--quick" in sys.argv
    results = asyncio.run(run(50 if quick else 200, 100 if quick else 400))
    print(" ".join(f"{key}={value}" for key, value in results.items()))


if __name__ == "__main__":
    main()
