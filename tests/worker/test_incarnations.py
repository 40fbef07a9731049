"""A worker runs a task message only for the incarnation of its workflow id that the state blob
holds (found by the simulation, seeds 1 and 1026 with ``--ops all``: docs/simulation.md).

After a purge and a re-submit of the same id, a late message of the purged workflow (attempt
numbers restart at 1; the purge deleted the claim blobs) used to run for the new one. It is
dead-lettered with its reason instead, and never takes the new workflow's claim.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from tests.worker.agents import run_until_drained
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.subprocess]

NAMES = ResourceNames("inc")


async def _run_agent(
    worker_settings: Callable[..., WorkerSettings],
    tmp_path: Path,
    state_incarnation: int | None,
    messages: list[int | None],
) -> tuple[list[str], list[str], int]:
    """Send a/1 once per incarnation in ``messages`` (in order) and run a worker until the queue
    is empty. Returns which of them ran (by marker), the dead-letter reasons, the events sent."""
    storage = memory_storage("inc")
    metadata = {"status": "running"}
    if state_incarnation is not None:
        metadata["incarnation"] = str(state_incarnation)
    await storage.workflows.create_state("wf1", b"{}", metadata)
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    for incarnation in messages:
        marker = tmp_path / f"ran-{incarnation}"
        message = TaskMessage(workflow_id="wf1", task="a", attempt=1, queue="cpu",
                              cmd=f"touch {marker}", incarnation=incarnation)  # fmt: skip
        await queue.send(encode(message))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    assert await queue.approximate_count() == 0
    ran = sorted(f"ran-{i}" for i in messages if (tmp_path / f"ran-{i}").exists())
    reasons = [d.reason for d in await storage.deadletters.list()]
    events = await storage.event_queue.approximate_count()
    if events:  # every event that was sent reports the message's own incarnation
        (event,) = await storage.event_queue.receive(1, 30)
        assert json.loads(event.text).get("incarnation") == state_incarnation
    return ran, reasons, events


async def test_a_message_of_the_purged_workflow_is_dead_lettered_not_run(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    ran, reasons, events = await _run_agent(worker_settings, tmp_path, 2, [1, 2])
    assert ran == ["ran-2"]  # the old a/1 took no claim the new a/1 needed
    (reason,) = reasons
    assert "task message of another incarnation of workflow 'wf1'" in reason
    assert events == 1


async def test_a_message_without_an_incarnation_is_of_an_earlier_workflow(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    """A message from before incarnations existed, for an id submitted again since."""
    ran, reasons, events = await _run_agent(worker_settings, tmp_path, 7, [None])
    assert (ran, len(reasons), events) == ([], 1, 0)


async def test_a_workflow_and_message_from_before_incarnations_still_run(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    ran, reasons, events = await _run_agent(worker_settings, tmp_path, None, [None])
    assert (ran, reasons, events) == (["ran-None"], [], 1)


async def test_a_frozen_worker_of_a_purged_run_writes_outside_the_new_incarnations_names(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    """A worker checks the incarnation right before running; the workflow is purged and its id
    submitted again while the task runs. Its log and output land under the purged incarnation's
    names, which the new workflow never reads, and which the purge of the new one never spares."""
    storage = memory_storage("inc")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running", "incarnation": "1"})
    head = storage.workflows.state_metadata

    async def purged_and_resubmitted_after_the_check(workflow_id: str) -> dict[str, str]:
        seen = await head(workflow_id)
        await storage.workflows.delete(workflow_id)
        await storage.workflows.create_state(
            "wf1", b"{}", {"status": "running", "incarnation": "2"}
        )
        return seen

    storage.workflows.state_metadata = purged_and_resubmitted_after_the_check  # type: ignore[method-assign]
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    big = "head -c 20000 /dev/zero | tr '\\0' x | sed 's/.*/\"&\"/' > \"$DAGQ_OUTPUT\""
    message = TaskMessage(workflow_id="wf1", task="a", attempt=1, queue="cpu",
                          cmd=f"echo late; {big}", incarnation=1,
                          incarnation_blobs=True)  # fmt: skip
    await queue.send(encode(message))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    written = set(storage.outputs.container.blobs)
    assert ResourceNames.log_blob("wf1", "a", 1, 1) in written
    assert ResourceNames.output_blob("wf1", "a", 1, 1) in written
    new_run = ResourceNames.outputs_prefix("wf1", 2)
    assert all(name.startswith(ResourceNames.outputs_prefix("wf1", 1)) for name in written)
    assert not any(name.startswith(new_run) for name in written)
