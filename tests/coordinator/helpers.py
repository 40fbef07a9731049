"""Shared pieces of the coordinator tests: workflows, submit, a fake clock, a driver loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from devtools.testing.synthetic_worker import SyntheticWorker
from shared import codec, engine
from shared.coordinator import Coordinator, CoordinatorOptions
from shared.definition.workflow import CompiledWorkflow, RetryPolicy, TaskDef
from shared.deployment import partition_metadata
from shared.engine.projection import index_row
from shared.engine.state import RuntimeState
from shared.messages import ActivateEvent, encode
from shared.names import ResourceNames
from shared.storage.ports import Storage
from tests.support.clock import FakeClock


def task(name: str, parents: tuple[int, ...] = (), *, queue: str = "cpu", **kw: Any) -> TaskDef:
    return TaskDef(name=name, cmd=f"echo {name}", queue=queue, parents=parents, **kw)


def diamond(**kw: Any) -> CompiledWorkflow:
    """a -> (b, c) -> d."""
    return CompiledWorkflow.of(
        "diamond",
        [task("a", **kw), task("b", (0,), **kw), task("c", (0,), **kw), task("d", (1, 2), **kw)],
    )


def fan(n: int, *, name: str = "fan", **kw: Any) -> CompiledWorkflow:
    """1 root -> n leaves -> 1 sink (n + 2 tasks)."""
    tasks = [task("root", **kw)]
    tasks += [task(f"leaf{i:05d}", (0,), **kw) for i in range(n)]
    tasks.append(task("sink", tuple(range(1, n + 1)), **kw))
    return CompiledWorkflow.of(name, tasks)


def retrying(retries: int, **policy: Any) -> dict[str, Any]:
    return {"num_retries": retries, "retry": RetryPolicy(**policy)}


async def submit(storage: Storage, wf: CompiledWorkflow, workflow_id: str, now: float) -> None:
    """What the API's submit writes: definition, initial state, index row, activate event (in
    the partition of ``storage``, a partition view)."""
    await storage.workflows.create_definition(workflow_id, codec.encode_definition(wf))
    state = engine.new_state(wf, workflow_id, now)
    metadata = codec.state_metadata(state) | partition_metadata(storage.partition)
    await storage.workflows.create_state(workflow_id, codec.encode_state(state), metadata)
    await storage.index.create(replace(index_row(wf, state), partition=storage.partition))
    await storage.event_queue.send(encode(ActivateEvent(workflow_id=workflow_id)))


async def load(storage: Storage, wf: CompiledWorkflow, workflow_id: str) -> RuntimeState:
    data = (await storage.workflows.read_state(workflow_id)).data
    return codec.decode_state(data, wf)


def fast_options(**kw: Any) -> CoordinatorOptions:
    base: dict[str, Any] = {"lease_s": 15, "activate_repair_after_s": 5.0}
    base.update(kw)
    return CoordinatorOptions(**base)


async def drive(
    storage: Storage,
    names: ResourceNames,
    worker: SyntheticWorker,
    done: Callable[[], object],
    *,
    clock: FakeClock,
    coordinator: Coordinator | None = None,
    rounds: int = 300,
    on_pass: Callable[[Coordinator], object] | None = None,
) -> Coordinator:
    """Alternate coordinator passes (with sweeps) and worker steps until ``await done()`` is true;
    when nothing moves, advance the fake clock (visibility timeouts, retry delays, leases)."""
    coord = coordinator or Coordinator(storage, names, fast_options(), clock=clock)
    for _ in range(rounds):
        result = await coord.run_once(sweep=True)
        if on_pass is not None:
            await on_pass(coord)  # type: ignore[misc]
        handled = await worker.step()
        if await done():  # type: ignore[misc]
            return coord
        if not result.stats.events_received and not handled:
            clock.advance(20)
    raise AssertionError("the workflow did not finish")
