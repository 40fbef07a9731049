"""A worker with the app's public key runs only task messages the app signed: a forged one (no
signature, another key's, or a signed message with its command changed) is dead-lettered with
its reason before the claim — it never runs, never takes the attempt's claim, never reports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shared.messages import TaskMessage, encode
from shared.names import ResourceNames
from shared.signing import Signer, new_key_pair
from shared.storage.memory import memory_storage
from tests.worker.agents import run_until_drained
from worker_agent.config import WorkerSettings

NAMES = ResourceNames("sig")
PRIVATE, PUBLIC = new_key_pair()


async def test_only_messages_the_app_signed_run(
    worker_settings: Callable[..., WorkerSettings], tmp_path: Path
) -> None:
    storage = memory_storage("sig")
    await storage.workflows.create_state("wf1", b"{}", {"status": "running"})
    queue = storage.queues.get(NAMES.task_queue("cpu"))

    def message(task: str) -> TaskMessage:
        cmd = f"touch {tmp_path / task}"
        return TaskMessage(workflow_id="wf1", task=task, attempt=1, queue="cpu", cmd=cmd)

    app, stranger = Signer(PRIVATE), Signer(new_key_pair()[0])
    tampered = app.sign(message("changed")).model_copy(update={"cmd": f"touch {tmp_path}/evil"})
    for text in (
        encode(app.sign(message("signed"))),
        encode(message("unsigned")),
        encode(stranger.sign(message("foreign"))),
        encode(tampered),
    ):
        await queue.send(text)

    await run_until_drained(worker_settings(verify_keys=PUBLIC), storage, NAMES, queue)

    ran = sorted(p.name for p in tmp_path.glob("*") if p.name != "work")  # noqa: ASYNC240
    assert ran == ["signed"]
    letters = await storage.deadletters.list()
    reasons = [letter.reason for letter in letters]
    assert len(letters) == 3
    assert any("TaskMessage is not signed by the app" in r for r in reasons), reasons
    assert sum("no key in DAGQ_VERIFY_KEYS made" in r for r in reasons) == 2, reasons
    claims = [n for n in storage.outputs.container.blobs if "/claim" in n]
    assert len(claims) == 1, claims
    assert claims[0].startswith("wf1/signed/"), claims
    assert await storage.event_queue.approximate_count() >= 1  # the signed one's completion
