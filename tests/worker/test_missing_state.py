"""A task message whose workflow has no state blob (issue 32: the submit sends a new workflow's
roots BEFORE it creates the state, ``shared.api.root_dispatch``).

A young message is handed back with its claim kept, and runs once the state is there; an old one
is an orphan (its submit failed after sending it, or the workflow was purged): dead-lettered
with the reason, its claim deleted (so a re-send of the attempt would find it free), never run,
nothing reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.errors import NotFoundError
from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage, memory_storage
from tests.worker.agents import run_until_drained
from worker_agent.config import WorkerSettings
from worker_agent.workflow_check import ORPHAN_AFTER_S

pytestmark = [pytest.mark.subprocess]

NAMES = ResourceNames("missing")
STATE = {"status": "running", "run": "1", "incarnation": "5"}


def _message(marker: Path) -> TaskMessage:
    return TaskMessage(workflow_id="wf1", task="a", attempt=1, queue="cpu", cmd=f"touch {marker}",
                       incarnation=5, incarnation_blobs=True, run=1)  # fmt: skip


async def _send(storage: MemoryStorage, message: TaskMessage, age_s: float = 0.0) -> None:
    """Send ``message`` as if it had been sent ``age_s`` seconds ago."""
    clock = storage.queues.clock
    storage.queues.clock = lambda: time.time() - age_s
    try:
        await storage.queues.get(NAMES.task_queue("cpu")).send(encode(message))
    finally:
        storage.queues.clock = clock


async def test_a_root_sent_before_its_state_waits_for_it_then_runs(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    """The worker's HEAD comes before the submit's state write: the message is handed back (not
    reported cancelled, as a missing state used to mean), and runs on its redelivery, whose
    claim it still holds."""
    storage = memory_storage("missing")
    head = storage.workflows.state_metadata
    heads = 0

    async def created_right_after_the_first_head(workflow_id: str) -> dict[str, str]:
        nonlocal heads
        heads += 1
        if heads == 1:  # the submit creates the state just after this HEAD answered
            await storage.workflows.create_state(workflow_id, b"{}", STATE)
            raise NotFoundError(f"no state blob for {workflow_id}")
        return await head(workflow_id)

    storage.workflows.state_metadata = created_right_after_the_first_head  # type: ignore[method-assign]
    message = _message(tmp_path / "ran")
    await _send(storage, message)
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    assert (tmp_path / "ran").exists()
    assert heads >= 2
    assert await storage.deadletters.list() == []
    (event,) = await storage.event_queue.receive(32, 30)
    assert '"kind":"completed"' in event.text.replace(" ", "")


async def test_an_old_message_without_a_state_is_an_orphan_dead_lettered(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    """Sent longer than ORPHAN_AFTER_S ago and still no state: its submit failed after the send
    (or the workflow was purged). Dead-lettered with the reason, its claim deleted, not run,
    nothing reported to a workflow that does not exist."""
    storage = memory_storage("missing")
    message = _message(tmp_path / "ran")
    await _send(storage, message, age_s=ORPHAN_AFTER_S + 5)
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    assert await queue.approximate_count() == 0
    assert not (tmp_path / "ran").exists()
    (letter,) = await storage.deadletters.list()
    assert "task message of workflow 'wf1' (incarnation 5), which has no state blob" in (
        letter.reason
    )
    assert message.claim_blob() not in storage.outputs.container.blobs
    assert await storage.event_queue.approximate_count() == 0
