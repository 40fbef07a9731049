"""The app's function list, its import cost, and the OpenAPI document that describes it.

``get_functions()`` may be called once per app object, and the app reads settings at import, so
every check here imports function_app in a fresh subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

_LIST_FUNCTIONS = """
import json, sys, time
started = time.perf_counter()
import function_app
elapsed = time.perf_counter() - started
HEAVY = ("azure.storage", "azure.data", "pydantic", "shared.definition.compiler",
         "shared.coordinator", "shared.engine", "yaml")
heavy = sorted(m for m in sys.modules if m.startswith(HEAVY))
functions = {}
for f in function_app.app.get_functions():
    functions[f.get_function_name()] = [
        b for b in json.loads(f.get_function_json())["bindings"] if b["type"].endswith("Trigger")
    ][0]
print(json.dumps({"import_s": elapsed, "functions": functions, "heavy": heavy}))
"""


def list_functions(env: dict[str, str] | None = None) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _LIST_FUNCTIONS],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, object] = json.loads(result.stdout)
    return data


@pytest.fixture(scope="module")
def listing() -> dict[str, object]:
    return list_functions({"DAGQ_PREFIX": "smoke", "DAGQ_API_AUTH_LEVEL": ""})


EXPECTED_HTTP = {
    "submit_workflow": ("workflows", ["POST"]),
    "list_workflows": ("workflows", ["GET"]),
    "get_workflow": ("workflows/{id}", ["GET"]),
    "get_task": ("workflows/{id}/tasks/{task}", ["GET"]),
    "get_task_log": ("workflows/{id}/tasks/{task}/log", ["GET"]),
    "get_task_attempts": ("workflows/{id}/tasks/{task}/attempts", ["GET"]),
    "get_task_output": ("workflows/{id}/tasks/{task}/output", ["GET"]),
    "cancel_workflow": ("workflows/{id}/cancel", ["POST"]),
    "retry_workflow": ("workflows/{id}/retry", ["POST"]),
    "list_workers": ("workers", ["GET"]),
    "doctor": ("doctor", ["GET"]),
    "delete_workflow": ("workflows/{id}", ["DELETE"]),
    "purge_workflows": ("purge", ["POST"]),
    "health": ("health", ["GET"]),
    "openapi": ("openapi.json", ["GET"]),
    "get_workflow_graph": ("workflows/{id}/graph", ["GET"]),
    "get_workflow_cost": ("workflows/{id}/cost", ["GET"]),
    "get_cost": ("cost", ["GET"]),
    "dashboard": ("ui", ["GET"]),
    "dashboard_asset": ("ui/{*path}", ["GET"]),
    "create_schedule": ("schedules", ["POST"]),
    "list_schedules": ("schedules", ["GET"]),
    "get_schedule": ("schedules/{name}", ["GET"]),
    "delete_schedule": ("schedules/{name}", ["DELETE"]),
    "pause_schedule": ("schedules/{name}/pause", ["POST"]),
    "resume_schedule": ("schedules/{name}/resume", ["POST"]),
}
ANONYMOUS = ("health", "openapi", "dashboard", "dashboard_asset")
"""Functions that hold no data: anonymous whatever DAGQ_API_AUTH_LEVEL says."""


def test_every_function_is_declared_with_its_trigger(listing: dict[str, object]) -> None:
    functions = listing["functions"]
    assert isinstance(functions, dict)
    assert set(functions) == {*EXPECTED_HTTP, "coordinator", "sweeps", "notify"}
    for name, (route, methods) in EXPECTED_HTTP.items():
        trigger = functions[name]
        assert trigger["type"] == "httpTrigger", name
        assert trigger["route"] == route, name
        assert trigger["methods"] == methods, name
        expected_auth = "ANONYMOUS" if name in ANONYMOUS else "FUNCTION"
        assert trigger["authLevel"] == expected_auth, name
    coordinator = functions["coordinator"]
    assert coordinator["type"] == "queueTrigger"
    assert coordinator["queueName"] == "smoke-events"  # ResourceNames("smoke").event_queue
    assert coordinator["connection"] == "DAGQ_STORAGE"
    notify = functions["notify"]  # issue 29: notifications, from a queue of their own
    assert notify["type"] == "queueTrigger"
    assert notify["queueName"] == "smoke-notify"  # ResourceNames("smoke").notify_queue
    assert notify["connection"] == "DAGQ_STORAGE"
    sweeps = functions["sweeps"]
    assert sweeps["type"] == "timerTrigger"
    assert sweeps["schedule"] == "%DAGQ_SWEEP_SCHEDULE%"
    assert sweeps.get("runOnStartup") in (None, False)


def test_auth_level_comes_from_an_app_setting() -> None:
    functions = list_functions({"DAGQ_API_AUTH_LEVEL": "anonymous"})["functions"]
    assert isinstance(functions, dict)
    assert functions["submit_workflow"]["authLevel"] == "ANONYMOUS"
    assert functions["coordinator"]["queueName"] == "dagq-events"  # the default prefix


def test_import_is_fast_and_touches_no_heavy_module(listing: dict[str, object]) -> None:
    # Flex Consumption allows 30 s for start-up; print the cost, assert only what is imported.
    print(f"function_app import: {listing['import_s']:.3f} s")
    assert listing["heavy"] == [], "imported at start-up instead of on first use"


def test_openapi_document_matches_the_routes(listing: dict[str, object]) -> None:
    functions = listing["functions"]
    assert isinstance(functions, dict)
    document = json.loads((REPO_ROOT / "shared" / "api" / "openapi.json").read_text())
    documented = {
        (path, method.upper(), op["operationId"])
        for path, ops in document["paths"].items()
        for method, op in ops.items()
    }
    served = {
        ("/" + trigger["route"].replace("{*", "{"), method, name)
        for name, trigger in functions.items()
        if trigger["type"] == "httpTrigger"
        for method in trigger["methods"]
    }
    assert documented == served
    assert document["servers"] == [{"url": "/api"}]
    host = json.loads((REPO_ROOT / "host.json").read_text())
    assert host["extensions"]["http"]["routePrefix"] == "api"


def test_one_queue_trigger_per_partition() -> None:
    functions = list_functions({"DAGQ_PREFIX": "smoke", "DAGQ_PARTITIONS": "3"})["functions"]
    assert isinstance(functions, dict)
    triggers = {
        name: f["queueName"] for name, f in functions.items() if f["type"] == "queueTrigger"
    }
    assert triggers == {
        "coordinator": "smoke-events",
        "coordinator_p1": "smoke-events-p1",
        "coordinator_p2": "smoke-events-p2",
        "notify": "smoke-notify",  # one notify queue whatever the partitions
    }  # ResourceNames("smoke").partition_event_queue(p)
    assert all(functions[name]["connection"] == "DAGQ_STORAGE" for name in triggers)


def test_a_bad_partition_count_stops_the_app_with_the_reason() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import function_app"],
        cwd=REPO_ROOT, env={**os.environ, "DAGQ_PARTITIONS": "0"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "DAGQ_PARTITIONS='0'" in result.stderr
    assert "use 1-64" in result.stderr
