"""Finished workflows to purge, for the operations tests."""

from __future__ import annotations

from devtools.testing.synthetic_worker import SyntheticWorker
from shared.names import ResourceNames
from shared.storage.ports import Storage
from tests.coordinator.helpers import FakeClock, diamond, drive, load, submit


async def finished_workflow(
    storage: Storage, workflow_id: str, clock: FakeClock, *, outputs: int = 3
) -> float:
    """Submit a diamond as ``workflow_id`` and run it to completion; add ``outputs`` blobs to its
    outputs prefix (logs, outputs, claims). Returns its creation time."""
    names: ResourceNames = storage.names  # type: ignore[attr-defined]  # both backends have it
    wf = diamond()
    await submit(storage, wf, workflow_id, clock.now)
    worker = SyntheticWorker(storage, names, ["cpu"], clock=clock)

    async def done() -> bool:
        return (await load(storage, wf, workflow_id)).status.is_terminal

    await drive(storage, names, worker, done, clock=clock)
    for i in range(outputs):
        await storage.outputs.put(ResourceNames.log_blob(workflow_id, f"t{i}", 1), b"log")
    return clock.now
