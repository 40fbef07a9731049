"""Cached pipelines run in memory with a synthetic worker: what the result cache's tests share."""

from __future__ import annotations

from dataclasses import replace

from pydantic import JsonValue

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.definition.workflow import CachePolicy, CompiledWorkflow
from shared.messages import TaskMessage
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, drive, load, submit, task

NAMES = ResourceNames("mem")


BIG = "x" * 20_000  # travels as a blob output


def pipeline(
    version: str = "", ttl_s: float = 86400.0, prep_cmd: str = "echo prep"
) -> CompiledWorkflow:
    """prep (not cached) -> train (cached) -> evaluate (cached)."""
    cache = CachePolicy(version=version, ttl_s=ttl_s)
    return CompiledWorkflow.of(
        "p",
        [
            replace(task("prep"), cmd=prep_cmd),
            task("train", (0,), cache=cache, gpus=1),
            task("evaluate", (1,), cache=cache),
        ],
    )


def worker(storage: MemoryStorage, clock: FakeClock, prep: JsonValue = "data-1") -> SyntheticWorker:
    script = {
        "prep": Behavior(output=prep),
        "train": Behavior(output={"weights": BIG}),
        "evaluate": Behavior(output=evaluate_output),
    }
    return SyntheticWorker(storage, NAMES, ["cpu"], script=script, clock=clock)


async def run(storage: MemoryStorage, clock: FakeClock, wf: CompiledWorkflow, wid: str,
              w: SyntheticWorker) -> None:  # fmt: skip
    await submit(storage, wf, wid, clock())

    async def done() -> bool:
        return (await load(storage, wf, wid)).status.is_terminal

    await drive(storage, NAMES, w, done, clock=clock)


def ran(w: SyntheticWorker) -> list[str]:
    return [e.message.task for e in w.history]


def evaluate_output(message: TaskMessage, upstream: dict[str, JsonValue]) -> JsonValue:
    return {"score": len(str(upstream.get("train")))}
