"""Templated foreach tasks end to end: the compiler's commands and DAGQ_VAR_* variables, run by a
real agent on Azurite, hand hostile values to the program as data and never run them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.definition.compiler import compile_text
from shared.errors import DefinitionError
from shared.messages import TaskCompletedEvent
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import create_workflow, read_events, running_agent, send_task
from worker_agent.config import WorkerSettings

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

HOSTILE = ["$(touch PWNED)", "`touch PWNED`", "'; touch PWNED; '", "x\ntouch PWNED", "a b\\"]
PROGRAM = (
    'python3 -c \'import json, os, sys; json.dump([sys.argv[1], os.environ["DAGQ_VAR_v"]],'
    ' open(os.environ["DAGQ_OUTPUT"], "w"))\' {{ v }}'
)


async def test_values_reach_the_program_as_data(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Callable[..., WorkerSettings],
    tmp_path: Path,
) -> None:
    wf = compile_text(
        json.dumps(
            {
                "name": "t",
                "tasks": [{"name": "t", "kwargs": {"cmd": PROGRAM}, "foreach": {"v": HOSTILE}}],
            }
        )
    )
    await create_workflow(azure_storage, "wf1")
    for tdef in wf.tasks:
        await send_task(azure_storage, names, "wf1", tdef.name, tdef.cmd, env=dict(tdef.env))
    async with running_agent(worker_settings(), azure_storage):
        events = await read_events(azure_storage, len(HOSTILE))
    outputs: list[str] = []
    for event in events:
        assert isinstance(event, TaskCompletedEvent), event
        assert event.output is not None
        outputs.append(json.dumps(event.output.inline))
    assert sorted(outputs) == sorted(json.dumps([v, v]) for v in HOSTILE)
    pwned = await asyncio.to_thread(lambda: list(tmp_path.rglob("PWNED")))
    assert not pwned, "a value ran as shell code"


def test_the_reported_command_is_refused_before_it_reaches_a_worker() -> None:
    with pytest.raises(DefinitionError) as info:
        compile_text(
            json.dumps(
                {
                    "name": "t",
                    "tasks": [
                        {
                            "name": "t",
                            "kwargs": {"cmd": 'echo "{{ v }}"'},
                            "foreach": {"v": HOSTILE},
                        }
                    ],
                }
            )
        )
    (issue,) = info.value.issues
    assert (issue.location, issue.task) == ("tasks.t.kwargs.cmd", "t")
