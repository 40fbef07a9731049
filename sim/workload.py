"""The workflows simulated users submit: small random DAGs, compiled by dagq's own compiler.

Each task's behaviour rides in its environment, so the simulated worker needs no side channel:
``SIM_FAIL`` is how many of its attempts fail (``always``: every one), and ``SIM_EXIT`` the exit
code they fail with. A quarter of the tasks have ``cache: true``: tasks are drawn from few
commands, so a later workflow's task often reuses an earlier one's result (a cache hit completes
it without a run) and the look-ups, records and hits interleave with everything else.
"""

from __future__ import annotations

import json
import random
from typing import Any

from shared.api.service import compile_definition
from shared.definition.workflow import CompiledWorkflow

QUEUES = ("cpu", "gpu")
"""The task queues (definition names) the simulated workers poll."""


def definition(rng: random.Random, name: str) -> dict[str, Any]:
    """A random definition document (the JSON a user would POST)."""
    n = rng.randint(1, 6)
    tasks: list[dict[str, Any]] = []
    for i in range(n):
        task: dict[str, Any] = {"name": f"t{i}", "kwargs": {"cmd": f"run t{i}"}}
        parents = sorted(rng.sample(range(i), k=min(i, rng.choice((0, 1, 1, 2)))))
        if parents:
            task["depends_on"] = [f"t{p}" for p in parents]
            if rng.random() < 0.15:
                task["dep_policy"] = rng.choice(("any", "all_settled"))
        if rng.random() < 0.3:
            task["queue"] = "gpu"
        retries = rng.choice((0, 0, 1, 2))
        if retries:
            task["num_retries"] = retries
            if rng.random() < 0.5:
                task["retry"] = {"initial_delay_s": rng.choice((1, 5, 20))}
        fail = rng.choices(("0", "1", "2", "always"), weights=(70, 12, 8, 10))[0]
        task["kwargs"]["env"] = {"SIM_FAIL": fail, "SIM_EXIT": str(rng.choice((1, 2)))}
        if rng.random() < 0.25:  # the result cache: same command and inputs in another workflow
            task["cache"] = True
        tasks.append(task)
    doc: dict[str, Any] = {"name": name, "default_queue": "cpu", "tasks": tasks}
    if rng.random() < 0.2:
        doc["max_parallelism"] = rng.randint(1, 2)
    if rng.random() < 0.2:
        doc["result_policy"] = "all_tasks_succeed"
    return doc


def compile_random(rng: random.Random, name: str) -> tuple[CompiledWorkflow, bytes]:
    """A random workflow, through the API's own validation and encoding."""
    text = json.dumps(definition(rng, name))
    return compile_definition(text, "json")


def fails(env: dict[str, str], attempt: int) -> bool:
    """Whether this attempt of a task with this environment fails."""
    fail = env.get("SIM_FAIL", "0")
    return fail == "always" or attempt <= int(fail)
