"""The simulated users: they call the API's own operations (``shared.api.service`` and
``shared.ops.purge``) — submit, re-submit of an id, cancel, retry (rerun), purge, purge then
re-submit — each from an API process of its own that the faults may kill.

A user whose call failed transiently (or whose API process died) calls again, as someone
re-running a command would; after the fault phase every operation left undecided is carried
through, so the end state is one the users meant.
"""

from __future__ import annotations

import asyncio
import random
import string
from collections.abc import Awaitable, Callable
from typing import Any

from shared.api import service
from shared.deployment import partition_of
from shared.errors import ConflictError, IncompleteSubmitError, NotFoundError
from shared.limits import MAX_COUNTER
from shared.names import new_workflow_id
from shared.ops.purge import purge_workflow
from shared.storage.ports import Storage
from sim import schedules
from sim.faults import Crash, TransientError
from sim.keys import SIGNER
from sim.storage import Actor, view
from sim.workload import compile_random
from sim.world_view import World

Call = Callable[[Storage], Awaitable[Any]]

OPS: dict[str, int] = {
    "submit": 40, "cancel": 14, "retry": 18, "purge": 12, "resubmit": 4, "purge_resubmit": 12
} | schedules.OPS  # fmt: skip
"""Every operation users make, with its weight in the default mix."""


async def users(world: World) -> None:
    """Start operations at random times during the fault phase; wait for all of them."""
    rng = world.rng
    ops: list[asyncio.Task[None]] = []
    count = 0
    while world.now() < world.fault_end:
        await asyncio.sleep(rng.expovariate(1 / world.config.op_gap_s))
        ops_mix = world.config.ops
        kind = (
            "submit"
            if not world.submitted
            else rng.choices(list(ops_mix), list(ops_mix.values()))[0]
        )
        count += 1
        ops.append(asyncio.create_task(operation(world, f"api{count}", kind)))
    await asyncio.gather(*ops)


async def operation(world: World, name: str, kind: str) -> None:
    rng = world.rng
    if kind in schedules.OPS:
        await schedules.operation(world, name, kind, call)
        return
    if kind == "submit":
        workflow_id = new_workflow_id(world.now(), _entropy(rng))
        wf, data = compile_random(rng, f"sim-{len(world.submitted)}")
        world.submitted.append(workflow_id)
        world.definitions[workflow_id] = (wf, data)
        await _submit(world, name, workflow_id)
        return
    workflow_id = rng.choice(world.submitted)
    world.platform.log(name, f"user: {kind} {workflow_id}")
    if kind == "cancel":
        world.oracle.cancelling(workflow_id)
        await call(
            world, name, lambda s: service.cancel(s, workflow_id, reason="sim", signer=SIGNER)
        )
    elif kind == "retry":
        await call(world, name, lambda s: service.retry(s, workflow_id, signer=SIGNER))
    elif kind == "resubmit":
        await _submit(world, name, workflow_id)
    else:
        purged = await _purge(world, name, workflow_id)
        if purged and kind == "purge_resubmit":
            await _submit(world, name, workflow_id)


async def _submit(world: World, name: str, workflow_id: str) -> None:
    wf, data = world.definitions[workflow_id]
    partition = partition_of(workflow_id, world.partitions)

    async def submit(storage: Storage) -> Any:
        world.oracle.submitting(workflow_id, wf, partition)
        return await service.submit(
            storage, wf, now=world.now() + world.rng.uniform(-1, 1), workflow_id=workflow_id,
            encoded=data, partitions=world.partitions,
            incarnation=1 + world.rng.randrange(MAX_COUNTER),  # seeded, not ``secrets``
            signer=SIGNER, names=world.names,
        )  # fmt: skip

    await call(world, name, submit)


async def _purge(world: World, name: str, workflow_id: str) -> bool:
    known = world.oracle.workflows.get(workflow_id)
    if known is None:
        return False
    was, incarnation, purged = known.purge_started, known.incarnation, known.purged
    known.purge_started = True
    known.purges += 1
    outcome = await call(world, name, lambda s: purge_workflow(s, workflow_id))
    known.purges -= 1
    if isinstance(outcome, ConflictError):  # refused: it deleted nothing (others may have)
        others = known.purged != purged  # another purge of the id answered meanwhile
        known.purge_started = known.purges > 0 or (
            (was or others) and known.incarnation == incarnation
        )
        return False
    known.purged += 1
    return True


async def call(world: World, name: str, fn: Call) -> Any:
    """Call ``fn`` from an API process until it gives an answer (a result, or a refusal such as
    NotFoundError or ConflictError, which is returned); a transient failure or a dead process
    means another try, from a fresh process if the old one died."""
    generation = 0
    actor = Actor(f"{name}#{generation}")
    while True:
        storage = view(world.platform, world.raw, actor)
        try:
            result = await fn(storage)
            world.platform.log(actor.name, f"user: answer {type(result).__name__}")
            return result
        except (NotFoundError, ConflictError) as exc:
            world.platform.log(actor.name, f"user: refused {type(exc).__name__}")
            return exc
        except (TransientError, IncompleteSubmitError):
            pass  # try again
        except Crash:
            generation += 1
            actor = Actor(f"{name}#{generation}")
        except Exception as exc:  # anything else is a bug of the API
            world.oracle.fail(actor.name, f"the API raised {exc!r}")
            return exc
        await asyncio.sleep(world.rng.uniform(0.5, 5.0))


def _entropy(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(6))
