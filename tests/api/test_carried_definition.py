"""A state blob carries a small definition (version 9, issue 32): the API's reads and a purge's
look at a workflow read its state blob only, on every backend; a large definition, or a state
written before, is read from its definition blob as before."""

from __future__ import annotations

import random

import pytest

from shared.api import reads, service
from shared.codec.definition import encode_definition
from shared.definition.compiler import compile_text
from shared.definition.workflow import CompiledWorkflow, TaskDef
from shared.errors import NotFoundError
from shared.limits import MAX_CARRIED_DEFINITION_BYTES
from shared.readback.workflow_reads import forget_definition, read_workflow
from shared.storage.ports import Storage
from tests.coordinator.faults import FaultPlan, faulty

DEFINITION = """
name: pair
tasks:
  - {name: a, kwargs: {cmd: "echo a"}}
  - {name: b, kwargs: {cmd: "echo b"}, depends_on: [a]}
"""
NOW = 1_800_000_000.0
READS = {"workflows.read_definition", "workflows.read_state"}


def _large() -> CompiledWorkflow:
    """A definition whose blob is larger than a state carries (random commands: zlib keeps them)."""
    rng = random.Random(32)
    cmds = [f"echo {rng.randbytes(400).hex()}" for _ in range(20)]
    return CompiledWorkflow.of(
        "large", [TaskDef(name=f"t{i}", cmd=cmd, queue="cpu") for i, cmd in enumerate(cmds)]
    )


async def _reads_of_a_fresh_process(storage: Storage, workflow_id: str) -> list[str]:
    """The blob reads ``read_workflow`` makes in a process that has not cached the definition."""
    plan = FaultPlan(only=READS)
    proxied = faulty(storage, plan)
    forget_definition(proxied, workflow_id)
    wf, state = await read_workflow(proxied, workflow_id)
    assert state.workflow_id == workflow_id
    assert [t.name for t in wf.tasks] == list(state.names)
    return plan.calls


async def test_a_small_definition_is_read_from_the_state(storage: Storage) -> None:
    wf = compile_text(DEFINITION)
    await service.submit(storage, wf, now=NOW, workflow_id="carried")
    assert await _reads_of_a_fresh_process(storage, "carried") == ["workflows.read_state"]
    _, state = await read_workflow(storage, "carried")
    assert state.definition == encode_definition(wf)
    view = await reads.get_workflow(storage, "carried")
    assert set(view.tasks) == {"a", "b"}


async def test_a_large_definition_is_read_from_its_blob(storage: Storage) -> None:
    wf = _large()
    assert len(encode_definition(wf)) > MAX_CARRIED_DEFINITION_BYTES
    await service.submit(storage, wf, now=NOW, workflow_id="large")
    calls = await _reads_of_a_fresh_process(storage, "large")
    assert calls == ["workflows.read_state", "workflows.read_definition"]


async def test_an_unknown_id_is_still_not_found(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="workflow 'nobody' not found"):
        await read_workflow(storage, "nobody")
