"""The readers ``dagq doctor``, the API and the dashboard use, run by the simulation against what
the run left in storage (issue 30, items 4 and 5):

- the recent dead letters (``DeadLetters.list``, the listing behind ``dagq doctor``'s dead-letter
  finding), with its scan bound set small: it returns exactly the ``RECENT`` newest letters the
  run wrote, never a sample (``check_recent_dead_letters``, at the end);
- the live progress of a workflow's running attempts (``shared.api.task_reads.live_progress``,
  behind the task views of the API and the dashboard), read from the worker registry: after each
  of the registry forger's writes, no progress is attributed to a task from a row whose worker
  is not the one the state names for it (``registry_forger``).

Both read the raw storage (no faults, no trace lines of their own) and the registry forger draws
from a random stream of its own, so the rest of a seed's choices stay as they were.
"""

from __future__ import annotations

import asyncio
import json
import random

from shared.api.task_reads import live_progress
from shared.engine.state import RuntimeState
from shared.progress import TaskProgress
from shared.states import TaskState
from shared.storage.registry import WorkerRecord, WorkerTask
from sim.workload import QUEUES
from sim.world_view import World

RECENT = 3
"""How many of the most recent dead letters the end check asks for."""
RECENT_SCAN = 5
"""The scan bound the end check sets (the real one is ``shared.limits.DEAD_LETTER_SCAN``,
5,000): small, so a run's dozen or so letters overflow it as a busy day overflows the real one."""


async def check_recent_dead_letters(world: World) -> None:
    """The listing of the ``RECENT`` most recent dead letters, with a scan of ``RECENT_SCAN``
    names, returns exactly the ``RECENT`` newest the run wrote: newest by receive time to the
    millisecond (what a letter's name says), ties by message id (the name's order)."""
    container = world.raw.deadletters.container
    letters = [json.loads(blob.data) for blob in container.blobs.values()]
    letters.sort(key=lambda d: (-int(d["received_at"] * 1000), d["message_id"]))
    expected = sorted((d["message_id"], d["received_at"]) for d in letters[:RECENT])
    listed = await world.raw.deadletters.list(RECENT, scan=RECENT_SCAN)
    got = sorted((d.message_id, d.received_at) for d in listed)
    if got != expected:
        world.oracle.fail(
            "end",
            f"the {RECENT} most recent dead letters listed (scan {RECENT_SCAN}) are"
            f" {[m for m, _ in got]}, not the newest {[m for m, _ in expected]}"
            f" of {len(letters)}",
        )


FORGED_PROGRESS = 0.999
"""The progress the registry forger claims (no honest simulated worker reports progress)."""


async def registry_forger(world: World) -> None:
    """A compromised worker identity writing registry rows: every 3-20 virtual seconds, a row
    claiming the current attempt of a queued or running task, with progress. Its worker id is
    its own, another worker's, or (one time in four) the very worker the state names for the
    task: that row the readers rightly trust (storage cannot tell who wrote a row), the others
    never. After each write, the readers' live progress of that workflow is checked."""
    rng = random.Random(world.seed * 7919 + 29)
    forged = 0
    while not world.stopping:
        await asyncio.sleep(rng.uniform(3.0, 20.0))
        candidates = [
            (wid, state)
            for wid in sorted(set(world.submitted))
            if (state := world.oracle._state(wid)) is not None and _active(state)
        ]
        if not candidates:
            continue
        workflow_id, state = rng.choice(candidates)
        i = rng.choice(_active(state))
        named = state.workers.get(i)
        worker_id = rng.choice(["forger", f"w{rng.randrange(3)}#{rng.randrange(2)}"])
        if named is not None and rng.random() < 0.25:
            worker_id = named
        task = WorkerTask(workflow_id, state.names[i], state.attempt[i],
                          progress=TaskProgress(progress=FORGED_PROGRESS),
                          incarnation=state.incarnation)  # fmt: skip
        now = world.now()
        forged += 1
        await world.raw.registry.beat(WorkerRecord(
            worker_id=worker_id, host=f"forged-{forged}", queues=list(QUEUES), slots=1,
            busy_slots=1, tasks=[task], version="forged", started_at=now, last_seen=now,
            interval_s=10.0))  # fmt: skip
        await check_live_progress(world, workflow_id, state)


def _claims(record: WorkerRecord) -> list[tuple[str, str, int, TaskProgress | None]]:
    return [(t.workflow_id, t.task, t.attempt, t.progress) for t in record.tasks]


def _active(state: RuntimeState) -> list[int]:
    wanted = (TaskState.QUEUED, TaskState.RUNNING)
    return [i for i in range(len(state.names)) if state.task(i).state in wanted]


async def check_live_progress(world: World, workflow_id: str, state: RuntimeState) -> None:
    """Every progress the readers attribute to a task comes from a registry row of the worker
    the state names for that task, for that task's attempt."""
    shown = await live_progress(world.raw, state)
    rows = await world.raw.registry.workers()
    for (task, attempt), progress in sorted(shown.items(), key=lambda kv: kv[0]):
        i = state.names.index(task)
        named = state.workers.get(i)
        claim = (workflow_id, task, attempt, progress)
        backed = named is not None and any(
            record.worker_id == named and claim in _claims(record) for record in rows
        )
        if not backed:
            world.oracle.fail(
                "reader",
                f"{workflow_id}: the readers show progress {progress.progress} for"
                f" {task}/{attempt} from a registry row of a worker the state does not name"
                f" for it (it names {named})",
            )
