"""Issue 11 §2: the worker reads upstream outputs and bundles from names it builds from the task
message's validated ids, never from a name a message or bundle carries."""

from __future__ import annotations

import json

import pytest

from shared.errors import MessageError
from shared.messages import OutputRef, TaskMessage, decode_task_message, encode
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from worker_agent.errors import AttemptError
from worker_agent.files import upstream_values

SECRET_NAME = "../azure-webjobs-secrets/host.json"


def message(**fields: object) -> TaskMessage:
    base: dict[str, object] = {"workflow_id": "wf1", "task": "sink", "attempt": 1, "queue": "cpu",
                               "cmd": "true"}  # fmt: skip
    base.update(fields)
    return TaskMessage.model_validate(base)


async def test_a_forged_parent_ref_in_a_bundle_is_refused_not_read() -> None:
    storage = memory_storage("mem")
    await storage.outputs.put(SECRET_NAME, b'"SECRET"')
    bundle = ResourceNames.upstream_blob("wf1", "sink", 1)
    refs = {"p": {"blob": SECRET_NAME, "size": 8}}
    await storage.outputs.put(bundle, json.dumps(refs).encode())
    with pytest.raises(AttemptError, match=r"names blob '\.\./azure-webjobs-secrets/host\.json'"):
        await upstream_values(message(upstream_blob=bundle), storage.outputs)


async def test_conventional_parent_refs_are_read() -> None:
    storage = memory_storage("mem")
    await storage.outputs.put(ResourceNames.output_blob("wf1", "p", 3), b'{"v": 1}')
    ref = OutputRef(blob=ResourceNames.output_blob("wf1", "p", 3), size=8)
    values = await upstream_values(message(upstream={"p": ref}), storage.outputs)
    assert values == {"p": {"v": 1}}


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"upstream_blob": SECRET_NAME}, "is not this attempt's 'wf1/sink/1/upstream.json'"),
        ({"upstream": {"p": {"blob": "wf1/p/01/output.json"}}}, "not one of its output blobs"),
        (
            {"upstream": {"p": {"blob": ResourceNames.output_blob("wf2", "p", 1)}}},
            "not one of its output blobs",
        ),
        ({"upstream": {"../p": {"inline": 1}}}, "upstream parent: invalid task name"),
        ({"task": "../sink"}, "invalid task name"),
    ],
)
def test_a_task_message_with_forged_names_is_malformed(
    fields: dict[str, object], reason: str
) -> None:
    raw = json.loads(encode(message()))
    raw.update(fields)
    with pytest.raises(MessageError, match="malformed task message") as caught:
        decode_task_message(json.dumps(raw))
    assert reason in str(caught.value)
