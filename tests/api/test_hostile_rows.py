"""One hostile registry row costs that row, never an endpoint (real HTTP, the app under the local
host, on Azurite). Rows are written as a forger with the workers' table access could."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import httpx
import pytest
from azure.core.exceptions import ResourceExistsError
from azure.data.tables import TableServiceClient
from azure.storage.blob import BlobServiceClient

from devtools.testing.api_host import HostProcess
from shared.settings import Settings
from shared.storage.azure.registry import to_entity
from shared.storage.registry import WorkerRecord, WorkerTask

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

DEEP = "[" * 20_000
HUGE = "9" * 400


def _good(worker_id: str, now: float) -> dict[str, Any]:
    from shared.progress import TaskProgress

    progress = TaskProgress(0.5, {"loss": 0.25})
    return to_entity(
        WorkerRecord(
            worker_id=worker_id, host="vm", queues=["cpu"], slots=1, busy_slots=1,
            tasks=[WorkerTask("wf-1", "t", 1, progress)], version="1", started_at=now - 60,
            last_seen=now, interval_s=20.0,
        )
    )  # fmt: skip


def _hostile(now: float) -> dict[str, dict[str, Any]]:
    """Rows that each broke GET /api/workers or /api/doctor, by what they hold."""
    good = _good("x", now)
    variants: dict[str, dict[str, Any]] = {
        "started-infinity": {"StartedAt": "Infinity"},
        "started-1e999": {"StartedAt": float("inf")},
        "started-nan": {"StartedAt": float("nan")},
        "last-seen-nan": {"LastSeen": "NaN"},
        "slots-infinity": {"Slots": float("inf")},
        "busy-s-infinity": {"BusyS": "1e999"},
        "huge-metric": {"Progress": f'[[0,{{"p":0.5,"m":{{"loss":{HUGE}}}}}]]'},
        "deep-tasks": {"Tasks": DEEP},
        "deep-progress": {"Progress": DEEP},
        "deep-gpus": {"Gpus": DEEP},
        "surrogate-host": {"Host": "\ud800"},
    }
    rows = {}
    for name, change in variants.items():
        row = {**good, "RowKey": f"hostile-{name}", "WorkerId": f"hostile-{name}", **change}
        rows[name] = row
    return rows


def _strict_json(response: httpx.Response) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"the body holds {constant}: not JSON")

    return json.loads(response.text, parse_constant=refuse)


@pytest.fixture(scope="module")
def hostile_registry(
    api_host: HostProcess, host_env: dict[str, str], host_settings: Settings
) -> float:
    now = time.time()
    httpx.get(f"{api_host.url}/workers", timeout=60)  # the host creates its tables
    with TableServiceClient.from_connection_string(host_env["DAGQ_STORAGE"]) as tables:
        client = tables.create_table_if_not_exists(host_settings.names.registry_table)
        client.upsert_entity(_good("good-worker", now))
        for row in _hostile(now).values():
            try:
                client.upsert_entity(row)
            except ValueError:  # a value the SDK will not send (it may refuse a lone surrogate)
                continue
        marks = [
            {"PartitionKey": "mark", "RowKey": "sweep", "At": "NaN"},
            {"PartitionKey": "queue", "RowKey": "cpu", "NotedAt": "Infinity"},
            {"PartitionKey": "queue", "RowKey": "gpu", "NotedAt": float("inf")},
        ]
        for row in marks:
            client.upsert_entity(row)
    # The workers' identity writes dead letters too; doctor reads the latest.
    forged_letters = {
        "deep": (DEEP, "1.5"),
        "nan-time": ('{"message_id":"m","text":"t","reason":"r","received_at":NaN}', "nan"),
        "surrogate": ('{"message_id":"m","text":"\\ud800","reason":"r","received_at":1}', "2"),
    }
    with BlobServiceClient.from_connection_string(host_env["DAGQ_STORAGE"]) as blobs:
        container = blobs.get_container_client(host_settings.names.deadletter_container)
        with contextlib.suppress(ResourceExistsError):
            container.create_container()
        for name, (body, received_at) in forged_letters.items():
            container.upload_blob(
                f"2099-01-01/{name}.json", body, metadata={"received_at": received_at},
                overwrite=True,
            )  # fmt: skip
    return now


def test_workers_answers_the_readable_rows_only(
    api_host: HostProcess, hostile_registry: float
) -> None:
    response = httpx.get(f"{api_host.url}/workers", timeout=60)
    assert response.status_code == 200, response.text
    body = _strict_json(response)
    ids = [w["worker_id"] for w in body["workers"]]
    assert "good-worker" in ids
    (good,) = [w for w in body["workers"] if w["worker_id"] == "good-worker"]
    assert good["tasks"] == [
        {"workflow_id": "wf-1", "task": "t", "attempt": 1, "progress": 0.5,
         "metrics": {"loss": 0.25}}
    ]  # fmt: skip
    # A bad progress or GPU column costs that column; any other bad value, the row.
    kept = {w["worker_id"]: w for w in body["workers"] if w["worker_id"] != "good-worker"}
    assert set(kept) == {"hostile-huge-metric", "hostile-deep-progress", "hostile-deep-gpus"}
    assert kept["hostile-huge-metric"]["tasks"][0]["progress"] == 0.5
    assert "metrics" not in kept["hostile-huge-metric"]["tasks"][0]
    assert "progress" not in kept["hostile-deep-progress"]["tasks"][0]
    assert "gpus" not in kept["hostile-deep-gpus"]


def test_doctor_answers_despite_hostile_rows(
    api_host: HostProcess, hostile_registry: float
) -> None:
    response = httpx.get(f"{api_host.url}/doctor", timeout=60)
    assert response.status_code == 200, response.text
    report = _strict_json(response)
    assert report["summary"]["workers_alive"] >= 1
