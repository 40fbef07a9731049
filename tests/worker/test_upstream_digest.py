"""The worker echoes a task message's upstream digest in every report of the attempt (the
coordinator takes a report as its attempt's only if it ran on the inputs the state recorded:
tests/coordinator/test_other_inputs.py), and a message without one gets reports without one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from shared.messages import OutputRef, TaskMessage, encode, upstream_digest
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from tests.worker.agents import run_until_drained
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.subprocess]

NAMES = ResourceNames("ups")


@pytest.mark.parametrize("with_digest", [True, False])
async def test_the_report_carries_the_messages_upstream_digest(
    worker_settings: Callable[..., WorkerSettings], with_digest: bool
) -> None:
    storage = memory_storage("ups")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running", "incarnation": "7"})
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    upstream = {"p": OutputRef(inline={"v": 1}, size=7)}
    digest = upstream_digest(upstream) if with_digest else None
    message = TaskMessage(workflow_id="wf1", task="a", attempt=1, queue="cpu", cmd="true",
                          incarnation=7, upstream=upstream, upstream_digest=digest)  # fmt: skip
    await queue.send(encode(message))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    (event,) = await storage.event_queue.receive(32, 30)
    report = json.loads(event.text)
    assert report["kind"] == "completed"
    assert report.get("upstream_digest") == digest


async def test_a_bundle_another_send_rewrote_is_reported_as_what_it_ran_on(
    worker_settings: Callable[..., WorkerSettings],
) -> None:
    """A fan-in's upstream travels in a bundle named by its attempt: a pass whose state write was
    lost and the next pass each write it for their send of the attempt. The report says the
    digest of the refs the worker read, not the one its message was sent with."""
    storage = memory_storage("ups")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running", "incarnation": "7"})
    queue = storage.queues.get(NAMES.task_queue("cpu"))
    sent = {"p": OutputRef(inline={"v": 1}, size=7)}
    other = {"q": OutputRef(inline={"v": 2}, size=7)}
    bundle = ResourceNames.upstream_blob("wf1", "a", 1, 7)
    await storage.outputs.put(bundle, json.dumps({"q": {"inline": {"v": 2}, "size": 7}}).encode())
    message = TaskMessage(workflow_id="wf1", task="a", attempt=1, queue="cpu", cmd="true",
                          incarnation=7, incarnation_blobs=True, upstream_blob=bundle,
                          upstream_digest=upstream_digest(sent))  # fmt: skip
    await queue.send(encode(message))
    await run_until_drained(worker_settings(), storage, NAMES, queue)
    (event,) = await storage.event_queue.receive(32, 30)
    assert json.loads(event.text).get("upstream_digest") == upstream_digest(other)
