"""Notifications end to end on Azurite (issue 29): the coordinator runs a workflow whose task
fails, enqueues its notifications, and the notify function's ``Deliverer`` POSTs them to a
receiver on 127.0.0.1 — signed (the HMAC is checked here), retried after a 500, dead-lettered
with its reason once the retry bound is spent. Storage is used as the app identity (its roles
enforced: tests/support/rbac.py)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

import pytest

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.api import service
from shared.coordinator import Coordinator, CoordinatorOptions
from shared.names import ResourceNames
from shared.notify import Deliverer, DeliveryOptions, TargetRules
from shared.readback.workflow_reads import read_workflow
from shared.settings import Settings
from shared.storage.factory import ensure_resources, open_storage
from shared.storage.ports import Storage
from tests.notify.receiver import receiver

pytestmark = pytest.mark.azurite

SECRET = "s3cret"
PUBLIC = "http://127.0.0.1:7071"


def definition(url: str) -> str:
    return f"""
name: nightly
default_queue: cpu
params: {{lr: 0.5}}
notify:
  - {{url: "{url}", events: [failed, task_failed], secret: {SECRET}}}
tasks:
  - {{name: prepare, kwargs: {{cmd: "true"}}}}
  - {{name: train, kwargs: {{cmd: "false"}}, depends_on: [prepare]}}
"""


@asynccontextmanager
async def failed_run(settings: Settings, url: str) -> AsyncIterator[tuple[Storage, str]]:
    """A workflow whose ``train`` failed for good, on storage opened as the app."""
    async with open_storage(settings, "app") as storage:
        await ensure_resources(storage, 1, settings.names)
        wf, encoded = service.compile_definition(definition(url))
        submitted = await service.submit(storage, wf, now=time.time(), encoded=encoded)
        wid = submitted.workflow_id
        options = replace(CoordinatorOptions.from_settings(settings), lease_s=15)
        coord = Coordinator(storage, settings.names, options)
        worker = SyntheticWorker(
            None,
            settings.names,
            ["cpu"],
            {"train": Behavior(always_fail=True)},  # type: ignore[arg-type]
        )
        async with open_storage(settings) as worker_storage:
            worker.storage = worker_storage
            stop = asyncio.Event()
            jobs = [
                asyncio.create_task(coord.run_forever(stop, sweep_every_s=0.5)),
                asyncio.create_task(worker.run(stop)),
            ]
            try:
                for _ in range(600):
                    _, state = await read_workflow(storage, wid)
                    if state.status.is_terminal:
                        break
                    await asyncio.sleep(0.05)
                assert state.status.value == "failed"
            finally:
                stop.set()
                await asyncio.gather(*jobs)
            # The worker's log of the failed attempt (the synthetic worker writes none).
            blob = ResourceNames.log_blob(wid, "train", state.attempt[1], state.blob_incarnation)
            await worker_storage.outputs.put(
                blob, b"".join(f"step {i}\n".encode() for i in range(30)) + b"CUDA out of memory\n"
            )
        yield storage, wid


async def pump(
    deliverer: Deliverer, storage: Storage, names: ResourceNames, quiet_s: float
) -> list[str]:
    """Deliver what the notify queue holds, as the notify function would, until nothing has been
    there for ``quiet_s`` seconds; the outcomes in order."""
    queue = storage.queues.get(names.notify_queue)
    outcomes: list[str] = []
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < quiet_s:
        got = await queue.receive(8, 30)
        for message in got:
            outcomes.append(await deliverer.handle(message.text, message.id, time.time()))
            await queue.delete(message)
        if got:
            idle_since = time.monotonic()
        await asyncio.sleep(0.1)
    return outcomes


def options(**kw: object) -> DeliveryOptions:
    rules = TargetRules(allow_private=True, allow_http=True)  # what the local stack allows
    return DeliveryOptions(rules=rules, base_delay_s=1.0, max_delay_s=1.0, public_url=PUBLIC, **kw)  # type: ignore[arg-type]


def check_signature(received_headers: dict[str, str], body: bytes) -> None:
    stamp = received_headers["X-Dagq-Timestamp"]
    mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert received_headers["X-Dagq-Signature"] == f"sha256={mac}"


async def test_signed_webhook_retried_after_a_500(settings: Settings) -> None:
    with receiver(500) as hook:
        async with failed_run(settings, hook.url()) as (storage, wid):
            deliverer = Deliverer(storage, settings.names, options(bound_s=60.0))
            outcomes = await pump(deliverer, storage, settings.names, quiet_s=3.0)
    assert sorted(outcomes) == ["delivered", "delivered", "retrying"]
    assert len(hook.requests) == 3
    deliveries = [r.headers["X-Dagq-Delivery"] for r in hook.requests]
    assert len(set(deliveries)) == 2  # the retried one kept its id
    for request in hook.requests:
        check_signature(request.headers, request.body)
    bodies = {json.loads(r.body)["event"]: json.loads(r.body) for r in hook.requests}
    assert set(bodies) == {"task_failed", "failed"}
    failed = bodies["failed"]
    assert failed["type"] == "dagq.workflow.failed"
    assert failed["workflow"]["id"] == wid
    assert failed["workflow"]["name"] == "nightly"
    assert failed["workflow"]["status"] == "failed"
    assert failed["workflow"]["url"] == f"{PUBLIC}/api/ui#/runs/{wid}"
    assert failed["workflow"]["duration_s"] >= 0
    assert failed["workflow"]["params"] == {"lr": 0.5}
    assert failed["failed_count"] == 1
    train = failed["failed_tasks"][0]
    assert train["name"] == "train"
    assert train["exit_code"] == 1
    assert train["log_tail"][-1] == "CUDA out of memory"
    assert len(train["log_tail"]) == 20
    assert bodies["task_failed"]["task"]["name"] == "train"


async def test_dead_letter_after_the_bound(settings: Settings) -> None:
    with receiver(always=500) as hook:
        async with failed_run(settings, hook.url()) as (storage, wid):
            deliverer = Deliverer(storage, settings.names, options(bound_s=2.5))
            outcomes = await pump(deliverer, storage, settings.names, quiet_s=3.0)
            letters = await storage.deadletters.list()
    # Each of the two notifications: tried, retried (a second apart) while the next try falls
    # within the bound, then dead-lettered with the last answer; every try reached the receiver.
    assert outcomes.count("dead") == 2
    assert outcomes.count("retrying") >= 2
    assert set(outcomes) == {"dead", "retrying"}
    assert len(hook.requests) == len(outcomes)
    reasons = [letter.reason for letter in letters]
    assert len(reasons) == 2
    assert all(
        re.fullmatch(
            rf"notification {re.escape(wid)}\.\d+\.1\.(failed|task_failed\.train)\.0"
            r" to 127\.0\.0\.1: not delivered in 2\.5 s \(\d+ tries\); last: HTTP 500 .*",
            r,
        )
        for r in reasons
    ), reasons


async def test_a_refused_target_is_dead_lettered_at_once(settings: Settings) -> None:
    with receiver() as hook:
        async with failed_run(settings, hook.url()) as (storage, _):
            strict = replace(options(), rules=TargetRules())  # a deployment's defaults
            deliverer = Deliverer(storage, settings.names, strict)
            outcomes = await pump(deliverer, storage, settings.names, quiet_s=1.0)
            letters = await storage.deadletters.list()
    assert outcomes == ["dead", "dead"]
    assert hook.requests == []
    assert all("webhook refused: http:// is refused" in letter.reason for letter in letters)
