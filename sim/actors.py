"""The simulated processes: Functions hosts running coordinator instances, task workers, and
the lease-breaking chaos. (The users, who call the API, are in ``sim.users``.)

Each runs as an asyncio task on the virtual loop. A process that dies (``Crash`` from its storage
view) is replaced by a fresh one — new caches, new lease bookkeeping — after a restart delay, as
the platform would.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import JsonValue

from shared.coordinator import Coordinator
from shared.errors import MessageError
from shared.messages import (
    CancelEvent,
    OutputRef,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskMessage,
    TaskStartedEvent,
    decode_task_message,
    encode,
)
from shared.storage.ports import Queue, ReceivedMessage, Storage
from sim.backlog_repairs import LAG_BUDGET_S, LAG_TIMER_S
from sim.faults import Crash, Tooth
from sim.keys import FORGED_CMD, FORGER, VERIFIER
from sim.schedules import sweep_job
from sim.storage import Actor, view
from sim.workload import QUEUES, fails
from sim.world_view import World
from worker_agent.heartbeat import hold_margin_s
from worker_agent.outbox import EventOutbox
from worker_agent.workflow_check import (
    CANCELLED_STATUSES,
    WorkflowSeen,
    orphaned,
    state_wait_s,
    workflow_cancelled,
    workflow_of,
)

HOST_MAX_DEQUEUE = 5
"""host.json maxDequeueCount: a trigger message that failed this often goes to the poison queue."""
HOST_VISIBILITY_S = 120
"""How long the host keeps a trigger message it received invisible (Functions: up to 10 min,
renewed while the function runs; shorter here so a dead host's message returns sooner)."""
TASK_VISIBILITY_S = 30
WORKER_SLOTS = 3
SEND_TRIES = 4
STALLED_SEND = 0.2
"""How often a worker's event send stalls for seconds first (the reports its other slots make
meanwhile gather behind it, and go as one batch)."""
"""Task slots per worker process (their reports share the process's outbox)."""
HEARTBEAT_S = 10.0


async def restarting(world: World, name: str, body: Callable[[Actor, int], Awaitable[None]],
                     partition: int | None = None) -> None:  # fmt: skip
    """Run ``body`` as process ``name``, replacing it after each death until the world stops."""
    generation = 0
    while not world.stopping:
        actor = Actor(f"{name}#{generation}", partition)
        try:
            await body(actor, generation)
        except Crash:
            actor.dead = True
        except Exception as exc:  # a bug in the code under test: the run fails on it
            actor.dead = True
            world.oracle.fail(actor.name, f"process raised {exc!r}")
        generation += 1
        await asyncio.sleep(world.rng.uniform(1.0, 10.0))


# -- coordinators --------------------------------------------------------------------------------


async def functions_host(world: World, actor: Actor, _generation: int) -> None:
    """One Functions instance of one partition: the queue trigger (host receive -> call ->
    delete, poison after ``HOST_MAX_DEQUEUE``), the timer trigger, now and then a plain pass."""
    rng, partition = world.rng, actor.partition or 0
    storage = view(world.platform, world.raw, actor)
    skew = rng.uniform(-world.config.max_skew_s, world.config.max_skew_s)
    options = world.lag.options(world.options)
    coordinator = Coordinator(
        storage,
        world.names,
        options,
        clock=lambda: world.now() + skew,
        keep_lease=True,
        after_sweeps=sweep_job(world),
    )
    idle = 0.5
    while not world.stopping:
        if world.lag.lagging(world.now()):  # no queue trigger: timer passes only
            await _lagging_pass(world, actor, coordinator)
            continue
        roll = rng.random()
        try:
            if roll < 0.9:
                busy = await _trigger(coordinator, storage)
            elif roll < 0.95:
                busy = bool((await coordinator.run_sweeps()).stats.events_received)
            else:
                busy = bool((await coordinator.run_once()).stats.events_received)
        except Exception as exc:  # storage trouble surfacing from a pass: the host retries
            world.platform.log(actor.name, f"pass raised {exc!r}")
            busy = False
        idle = 0.2 if busy else min(idle * 2, world.config.max_poll_s)
        await asyncio.sleep(rng.uniform(0, idle))
    _ = partition


async def _lagging_pass(world: World, actor: Actor, coordinator: Coordinator) -> None:
    """A timer pass of a host whose queue trigger lags (``sim.backlog_repairs.Lag``): one
    receive of the event queue, the sweeps, then the timer's pause."""
    try:
        await coordinator.run_sweeps(LAG_BUDGET_S)
    except Exception as exc:  # storage trouble surfacing from a pass: the host retries
        world.platform.log(actor.name, f"pass raised {exc!r}")
    await asyncio.sleep(world.rng.uniform(LAG_TIMER_S / 2, LAG_TIMER_S))


async def _trigger(coordinator: Coordinator, storage: Storage) -> bool:
    queue = storage.event_queue
    messages = await queue.receive(1, HOST_VISIBILITY_S)
    if not messages:
        return False
    message = messages[0]
    if message.dequeue_count > HOST_MAX_DEQUEUE:
        await storage.event_poison_queue.send(message.text)
        await queue.delete(message)
        return True
    try:
        await coordinator.handle_trigger_message(message.text, message.id, message.dequeue_count)
    except Exception:  # the host makes the message visible again for another try
        await queue.extend(message, 0)
        return True
    await queue.delete(message)
    return True


# -- workers -------------------------------------------------------------------------------------


async def worker(world: World, actor: Actor, _generation: int) -> None:
    """A task worker of ``WORKER_SLOTS`` slots: each polls the task queues, claims, runs (with
    heartbeats), reports, deletes; their reports share one outbox, as the worker agent's do (events
    ready together go as one message: ``worker_agent.outbox``)."""
    storage = view(world.platform, world.raw, actor)

    async def send(partition: int, text: str, _events: int) -> None:
        queue = storage.for_partition(partition).event_queue
        if world.rng.random() < STALLED_SEND:  # a connection stalls: the slots' reports gather
            await asyncio.sleep(world.rng.uniform(2.0, 15.0))
        for tries in range(1, SEND_TRIES + 1):  # as the worker's Reporter, within a bound
            try:
                await queue.send(text)
                return
            except Exception as exc:  # a lost reply too: the copy sent is a duplicate, harmless
                if tries == SEND_TRIES:
                    raise
                world.platform.log(actor.name, f"event send failed ({exc!r}); trying again")
                await asyncio.sleep(world.rng.uniform(0.5, 3.0))

    outbox = EventOutbox(send)
    slots = [asyncio.create_task(_slot(world, actor, storage, outbox)) for _ in range(WORKER_SLOTS)]
    try:  # a death in one slot is the whole process's
        done, _ = await asyncio.wait(slots, return_when=asyncio.FIRST_EXCEPTION)
        for slot in done:
            slot.result()
    finally:
        for slot in slots:
            slot.cancel()
        await asyncio.wait(slots)


async def _slot(world: World, actor: Actor, storage: Storage, outbox: EventOutbox) -> None:
    queues = [storage.queues.get(world.names.task_queue(q)) for q in QUEUES]
    idle = 0.5
    while not world.stopping:
        got = 0
        for queue in world.rng.sample(queues, len(queues)):
            try:
                messages = await queue.receive(1, TASK_VISIBILITY_S)  # one per free slot
            except Exception as exc:  # storage trouble: poll again later
                world.platform.log(actor.name, f"receive failed: {exc!r}")
                continue
            for message in messages:
                got += 1
                try:
                    await _attempt(world, actor, storage, queue, message, outbox)
                except Crash:
                    raise
                except Exception as exc:  # storage trouble: the message comes back on its own
                    world.platform.log(actor.name, f"attempt abandoned: {exc!r}")
        idle = 0.2 if got else min(idle * 2, world.config.max_poll_s)
        await asyncio.sleep(world.rng.uniform(0, idle))


async def _attempt(world: World, actor: Actor, storage: Storage, queue: Queue,
                   received: ReceivedMessage, outbox: EventOutbox) -> None:  # fmt: skip
    message = decode_task_message(received.text)
    try:
        VERIFIER.check(message)  # as the worker does, before the claim
    except MessageError as exc:
        await storage.deadletters.put(message_id=received.id, text=received.text,
                                      reason=str(exc), received_at=world.now())  # fmt: skip
        await queue.delete(received)
        return
    if message.cmd == FORGED_CMD:
        world.oracle.fail(actor.name, f"a forged task message passed the check: {message.key}")
    wid = message.workflow_id
    if not await _claimed(world, storage, queue, received, message):
        return
    asked = world.now()
    held = await queue.extend(received, TASK_VISIBILITY_S)  # the worker's heartbeat, in effect
    if held is None:  # the checks stalled past the visibility: another worker holds it now
        world.platform.log(actor.name, f"lost the message of {message.key} before running it")
        return
    received = held
    seen = await workflow_of(storage, message)  # the worker's own checks, one HEAD
    if await _set_aside(world, storage, queue, received, seen):
        return
    if seen.late(message, received.dequeue_count):
        await queue.delete(received)  # its run has ended: never run after the end (as the worker)
        return
    partition = _report_partition(world, message)
    if seen.status in CANCELLED_STATUSES:
        await outbox.post(encode(_failed(actor, message, "cancelled", world.now())), partition)
        await queue.delete(received)
        return
    held_until = asked + TASK_VISIBILITY_S - hold_margin_s(TASK_VISIBILITY_S)
    if world.now() >= held_until:  # as the worker's Heartbeat.held
        world.platform.log(actor.name, f"the hold on {message.key} ran out before it started")
        return  # its checks stalled past the visibility: another worker may hold it (seed 3604306)
    run_key = world.oracle.started(actor.name, wid, message.key, received.id, message.incarnation)
    reported = False
    upstream: dict[str, JsonValue] | None = None
    try:
        started_at = world.now()
        upstream = await _upstream(storage, message)
        if world.rng.random() < 0.3:
            await outbox.post(encode(TaskStartedEvent(
                **message.report_fields(), worker=actor.name, started_at=started_at)),
                partition)  # fmt: skip
        received_now = await _run(world, actor, storage, queue, received, message, outbox)
        if received_now is None:
            return
        received = received_now
        if fails(message.env, message.attempt):
            event: Any = _failed(actor, message, "exit", started_at)
        else:
            value: dict[str, JsonValue] = {"task": message.task, "up": _digest(upstream)}
            size = len(json.dumps(value))
            event = TaskCompletedEvent(
                **message.report_fields(), worker=actor.name, started_at=started_at,
                finished_at=world.now(), output=OutputRef(inline=value, size=size))  # fmt: skip
        reported = True  # from here the report may reach the queue (a lost reply still does)
        await outbox.post(encode(event), partition)
    finally:
        world.oracle.ended(run_key, reported=reported, upstream=upstream)
    if await queue.delete(received):
        world.oracle.deleted(run_key)


async def _claimed(world: World, storage: Storage, queue: Queue, received: ReceivedMessage,
                   message: TaskMessage) -> bool:  # fmt: skip
    """Whether this message may run its attempt, as the worker's claim decides (a duplicate
    dispatch is deleted unrun)."""
    if Tooth.NO_CLAIM in world.platform.teeth:
        return True
    claim = message.claim_blob()
    mine = await storage.outputs.create_if_absent(claim, received.id.encode())
    if not mine and (await storage.outputs.get(claim)).decode() != received.id:
        await queue.delete(received)  # a duplicate dispatch: someone else runs it
        return False
    return True


async def _set_aside(world: World, storage: Storage, queue: Queue, received: ReceivedMessage,
                     seen: WorkflowSeen) -> bool:  # fmt: skip
    """Whether the message is not for this worker to go on with, as the worker decides: its state
    not there yet (handed back: a submit sends the roots first), or a purged run's late message
    or an orphan (kept aside with its reason, never run)."""
    if seen.missing and (wait := state_wait_s(received, world.now())):
        await queue.extend(received, wait)
        return True
    message = decode_task_message(received.text)
    if reason := seen.foreign or await orphaned(storage, seen, message):
        await storage.deadletters.put(message_id=received.id, text=received.text,
                                      reason=reason, received_at=world.now())  # fmt: skip
        await queue.delete(received)
        return True
    return False


def _report_partition(world: World, message: TaskMessage) -> int:
    if world.partitions > 1 and world.platform.chance(world.platform.faults.misroute):
        return (message.partition + 1) % world.partitions
    return message.partition


async def _run(
    world: World, actor: Actor, storage: Storage, queue: Queue, received: ReceivedMessage,
    message: TaskMessage, outbox: EventOutbox,
) -> ReceivedMessage | None:  # fmt: skip
    """'Run' the command with heartbeats; None if the run ended without a report (eviction,
    cancel noticed). A death raises Crash."""
    rng, f = world.rng, world.platform.faults
    duration = rng.choice((0.5, 2.0, 5.0)) if rng.random() < 0.85 else rng.uniform(20, 60)
    crash_at = rng.uniform(0, duration) if world.platform.chance(f.worker_crash) else None
    evict_at = rng.uniform(0, duration) if world.platform.chance(f.preempt) else None
    elapsed = 0.0
    while elapsed < duration:
        step = min(HEARTBEAT_S, duration - elapsed)
        for stop_at, what in ((crash_at, "crash"), (evict_at, "evict")):
            if stop_at is not None and elapsed <= stop_at < elapsed + step:
                await asyncio.sleep(stop_at - elapsed)
                if what == "crash":
                    actor.dead = True
                    world.platform.log(actor.name, f"died running {message.key}")
                    raise Crash(message.key)
                world.platform.log(actor.name, f"evicted running {message.key}")
                await queue.extend(received, 0)
                return None
        await asyncio.sleep(step)
        elapsed += step
        if elapsed < duration:
            renewed = await queue.extend(received, TASK_VISIBILITY_S)
            if renewed is None:
                world.platform.log(actor.name, f"lost the message of {message.key}")
                return None
            received = renewed
            if await workflow_cancelled(storage, message):
                cancelled = _failed(actor, message, "cancelled", world.now())
                await outbox.post(encode(cancelled), message.partition)
                await queue.delete(received)
                return None
    return received


async def _upstream(storage: Storage, message: TaskMessage) -> dict[str, JsonValue]:
    refs = message.upstream or {}
    if message.upstream_blob:
        raw = json.loads(await storage.outputs.get(message.upstream_blob))
        refs = {name: OutputRef.model_validate(ref) for name, ref in raw.items()}
    values: dict[str, JsonValue] = {}
    for name, ref in refs.items():
        values[name] = json.loads(await storage.outputs.get(ref.blob)) if ref.blob else ref.inline
    return values


def _digest(upstream: dict[str, JsonValue]) -> str:
    text = json.dumps(upstream, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _failed(actor: Actor, message: TaskMessage, reason: str, started_at: float) -> TaskFailedEvent:
    return TaskFailedEvent(
        **message.report_fields(), worker=actor.name, started_at=started_at, finished_at=started_at,
        reason=reason,  # type: ignore[arg-type]
        exit_code=int(message.env.get("SIM_EXIT", "1")) if reason == "exit" else None,
        error="workflow cancelled" if reason == "cancelled" else "simulated failure",
    )  # fmt: skip


# -- chaos ---------------------------------------------------------------------------------------


async def forger(world: World) -> None:
    """A compromised worker identity: now and then a task message and a cancel event the app
    never signed (none, or another key's), for a workflow a user submitted. None may run or be
    applied (``sim.keys``; the oracle checks both). Its own random stream, so the rest of a seed's
    choices stay as they were."""
    rng = random.Random(world.seed * 7919 + 17)
    while not world.stopping:
        await asyncio.sleep(rng.uniform(5.0, 40.0))
        if not world.submitted or world.stopping:
            continue
        workflow_id = rng.choice(world.submitted)
        queue = world.names.task_queue(rng.choice(QUEUES))
        message = TaskMessage(workflow_id=workflow_id, task="a", attempt=1, queue="cpu",
                              cmd=FORGED_CMD)  # fmt: skip
        cancel = CancelEvent(workflow_id=workflow_id, reason="forged")
        if rng.random() < 0.5:
            message, cancel = FORGER.sign(message), FORGER.sign(cancel)
        world.platform.log("forger", f"forges a task message and a cancel of {workflow_id}")
        partition = world.oracle.workflows[workflow_id].partition
        await world.raw.queues.get(queue).send(encode(message))
        await world.raw.for_partition(partition).event_queue.send(encode(cancel))


async def chaos(world: World) -> None:
    """Break a partition's lease now and then (an operator, a renewal that never arrived)."""
    while not world.stopping:
        await asyncio.sleep(1.0)
        if world.platform.chance(world.platform.faults.lease_break):
            partition = world.rng.randrange(world.partitions)
            world.platform.log("chaos", f"breaks the lease of partition {partition}")
            world.oracle.broken_at[partition] = world.now()
            await world.raw.for_partition(partition).lease.break_lease()
