"""Issue 11 §2: the API reads task logs and outputs from names it builds from validated ids,
never from a name stored in the state (which an event could once set to anything)."""

from __future__ import annotations

from shared import codec
from shared.api.reads import get_log, get_task, read_task_output
from shared.messages import OutputRef
from shared.names import ResourceNames
from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.helpers import FakeClock, diamond, load, submit

NAMES = ResourceNames("mem")
FORGED_LOG = "../secretstuff/host.json"
FORGED_OUTPUT = "../azure-webjobs-secrets/host.json"


async def forged(storage: MemoryStorage, clock: FakeClock) -> None:
    """A workflow whose state holds forged blob names for task a (as a state written before
    events were checked could), with the conventional blobs and the forged ones both present."""
    await submit(storage, diamond(), "wf1", clock())
    state = await load(storage, diamond(), "wf1")
    state.attempt[0] = 1
    state.log_blob[0] = FORGED_LOG
    state.outputs[0] = OutputRef(blob=FORGED_OUTPUT, size=8)
    etag = (await storage.workflows.read_state("wf1")).etag
    data = codec.encode_state(state)
    await storage.workflows.write_state("wf1", data, etag, codec.state_metadata(state))
    for name in (FORGED_LOG, FORGED_OUTPUT):
        await storage.outputs.put(name, b'"SECRET"')
    await storage.outputs.put(NAMES.log_blob("wf1", "a", 1), b"the real log")
    await storage.outputs.put(NAMES.output_blob("wf1", "a", 1), b'"the real output"')


async def test_task_blobs_are_read_by_their_conventional_names() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    await forged(storage, clock)
    log = await get_log(storage, "wf1", "a", attempt=None, offset=0)
    assert log.data == b"the real log"
    assert await read_task_output(storage, "wf1", "a") == b'"the real output"'
    detail = await get_task(storage, "wf1", "a", outputs_container=NAMES.outputs_container)
    assert detail.log is not None
    assert detail.log.blob == ResourceNames.log_blob("wf1", "a", 1)
    assert detail.output is not None
    assert getattr(detail.output, "blob", None) == ResourceNames.output_blob("wf1", "a", 1)
