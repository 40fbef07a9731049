"""The Python tasks of a real worker started by the suite are under the test network guard too
(tests/support/netguard.py passes its variables through the task env allowlist)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared.messages import TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.factory import AzureStorage
from tests.support.netguard import Offences
from tests.worker.agents import create_workflow, read_events, running_agent, send_task
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]


OFFENDING_TASK = (
    "python3 -c 'import socket; socket.socket().connect((\"192.0.2.1\", 9))'"
    ' 2>&1 | grep -c "network guard" > "$DAGQ_OUTPUT"'
)


@pytest.mark.azurite
@pytest.mark.subprocess
async def test_a_real_workers_python_tasks_are_guarded(
    netguard: Offences,
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Callable[..., WorkerSettings],
) -> None:
    # Before: the task env allowlist dropped PYTHONPATH and the guard's directory, so a task
    # ran unguarded.
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", OFFENDING_TASK)
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent), event
    assert event.output is not None
    assert event.output.inline == 1
    assert [(o["event"], o["host"]) for o in netguard.take()] == [("socket.connect", "192.0.2.1")]
