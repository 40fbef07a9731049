"""Running a submitted workflow to its end over memory storage, for the purge tests."""

from __future__ import annotations

from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.storage.memory import MemoryStorage
from tests.coordinator.helpers import FakeClock, diamond, drive, load

BIG = "x" * 20_000
"""An output too large to travel inline: it is a blob."""


async def run_to_end(storage: MemoryStorage, workflow_id: str, clock: FakeClock) -> None:
    """Run ``diamond()`` submitted as ``workflow_id`` until it ends, its outputs blobs."""
    worker = SyntheticWorker(
        storage, storage.names, ["cpu"], clock=clock, script={"*": Behavior(output=BIG)}
    )

    async def done() -> bool:
        return (await load(storage, diamond(), workflow_id)).status.is_terminal

    await drive(storage, storage.names, worker, done, clock=clock)
