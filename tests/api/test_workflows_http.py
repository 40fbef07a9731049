"""Every endpoint over real HTTP: the app under the local host, on Azurite, with synthetic workers.

The host runs the queue trigger (coordinator) and the sweep timer itself; the tests only talk HTTP
and run synthetic workers that take task messages and report events, as real workers would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.testing.api_host import REPO_ROOT, HostProcess
from devtools.testing.synthetic_worker import Behavior, SyntheticWorker
from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage.factory import open_storage
from tests.api.documented import assert_documented

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

WAIT_S = 60.0


def diamond(name: str = "diamond", queue: str = "cpu", cmd: str = "echo") -> str:
    return f"""
name: {name}
default_queue: {queue}
tasks:
  - name: prep
    kwargs: {{cmd: "{cmd} prep"}}
  - name: left
    kwargs: {{cmd: "{cmd} left"}}
    depends_on: [prep]
  - name: right
    kwargs: {{cmd: "{cmd} right"}}
    depends_on: [prep]
  - name: join
    kwargs: {{cmd: "{cmd} join"}}
    depends_on: [left, right]
"""


@asynccontextmanager
async def workers(
    settings: Settings, script: dict[str, Behavior], queues: tuple[str, ...] = ("cpu",)
) -> AsyncIterator[SyntheticWorker]:
    async with open_storage(settings) as storage:
        worker = SyntheticWorker(storage, settings.names, list(queues), script, watch_cancel=True)
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        try:
            yield worker
        finally:
            stop.set()
            await task


@asynccontextmanager
async def client(host: HostProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=host.url, timeout=30) as http:
        yield http


async def submit(http: httpx.AsyncClient, text: str, **params: str) -> httpx.Response:
    return await http.post(
        "/workflows", content=text, params=params, headers={"Content-Type": "application/yaml"}
    )


async def wait_status(
    http: httpx.AsyncClient, workflow_id: str, *statuses: str, timeout_s: float = WAIT_S
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        response = await http.get(f"/workflows/{workflow_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if body["status"] in statuses:
            return body
        assert time.monotonic() < deadline, f"still {body['status']}: {body}"
        await asyncio.sleep(0.2)


async def test_submit_runs_to_completion_and_reads_back(
    api_host: HostProcess, host_settings: Settings
) -> None:
    script = {"left": Behavior(output={"score": 0.9}), "*": Behavior()}
    async with workers(host_settings, script), client(api_host) as http:
        response = await submit(http, diamond())
        assert response.status_code == 201, response.text
        created = response.json()
        workflow_id = created["id"]
        assert created["status"] == "running"  # its root sent by the submit itself (issue 32)
        assert created["url"].endswith(f"/api/workflows/{workflow_id}")
        assert response.headers["location"] == created["url"]

        body = await wait_status(http, workflow_id, "completed", "failed")
    assert body["status"] == "completed", body
    assert body["name"] == "diamond"
    assert body["total"] == 4
    assert body["counts"]["completed"] == 4
    assert body["created_at"] <= body["updated_at"]
    assert set(body["tasks"]) == {"prep", "left", "right", "join"}
    join = body["tasks"]["join"]
    assert join["state"] == "completed"
    assert join["attempt"] == 1
    assert join["queue"] == "cpu"
    assert join["finished_at"] >= join["started_at"]

    async with client(api_host) as http:
        summary = (await http.get(f"/workflows/{workflow_id}", params={"tasks": "false"})).json()
        assert "tasks" not in summary
        assert summary["status"] == "completed"

        response = await http.get(f"/workflows/{workflow_id}/tasks/left")
        detail = assert_documented(response, "/workflows/{id}/tasks/{task}")
        assert detail["name"] == "left"
        assert detail["depends_on"] == ["prep"]
        assert detail["cmd"] == "echo left"
        assert detail["output"]["inline"] == {"score": 0.9}
        output = await http.get(f"/workflows/{workflow_id}/tasks/left/output")
        assert output.status_code == 200
        assert output.json() == {"score": 0.9}
        no_output = await http.get(f"/workflows/{workflow_id}/tasks/join/output")
        assert no_output.status_code == 404
        assert no_output.headers["content-type"].startswith("application/problem+json")
        no_log = await http.get(f"/workflows/{workflow_id}/tasks/join/log")
        assert no_log.status_code == 404

        listing = (await http.get("/workflows", params={"name": "diamond"})).json()
        assert workflow_id in [item["id"] for item in listing["items"]]

        # Cancel of a finished workflow is accepted and changes nothing.
        cancel = await http.post(f"/workflows/{workflow_id}/cancel")
        assert cancel.status_code == 202
        assert cancel.json()["status"] == "completed"
        assert cancel.json()["cancel_requested"] is False
        # Nothing to rerun in a completed workflow.
        retry = await http.post(f"/workflows/{workflow_id}/retry")
        assert retry.status_code == 409
        assert "nothing to rerun" in retry.json()["detail"]


async def test_idempotent_submit(api_host: HostProcess) -> None:
    workflow_id = "idem-" + uuid.uuid4().hex[:8]
    text = diamond(name="idem", queue="nobody")
    async with client(api_host) as http:
        first = await submit(http, text, id=workflow_id)
        assert first.status_code == 201, first.text
        again = await submit(http, text, id=workflow_id)
        assert again.status_code == 200, again.text
        assert again.json()["id"] == workflow_id
        # The same definition as JSON is the same workflow.
        as_json = {
            "name": "idem",
            "default_queue": "nobody",
            "tasks": [
                {"name": "prep", "kwargs": {"cmd": "echo prep"}},
                {"name": "left", "kwargs": {"cmd": "echo left"}, "depends_on": ["prep"]},
                {"name": "right", "kwargs": {"cmd": "echo right"}, "depends_on": ["prep"]},
                {"name": "join", "kwargs": {"cmd": "echo join"}, "depends_on": ["left", "right"]},
            ],
        }
        same = await http.post("/workflows", params={"id": workflow_id}, json=as_json)
        assert same.status_code == 200, same.text
        different = await submit(http, diamond(name="idem", queue="nobody", cmd="true"),
                                 id=workflow_id)  # fmt: skip
        assert different.status_code == 409
        assert different.headers["content-type"].startswith("application/problem+json")
        assert "different definition" in different.json()["detail"]
        listing = (await http.get("/workflows", params={"name": "idem"})).json()
        assert [item["id"] for item in listing["items"]].count(workflow_id) == 1


async def test_list_pages_newest_first_with_filters(api_host: HostProcess) -> None:
    name = "page" + uuid.uuid4().hex[:6]
    async with client(api_host) as http:
        ids = []
        for i in range(5):
            response = await submit(http, diamond(name=f"{name}-{i}", queue="nobody"))
            assert response.status_code == 201
            ids.append(response.json()["id"])
            await asyncio.sleep(0.01)  # distinct creation times: a strict newest-first order
        seen: list[str] = []
        params: dict[str, str] = {"name": name, "limit": "2"}
        pages = 0
        while True:
            page = (await http.get("/workflows", params=params)).json()
            pages += 1
            assert len(page["items"]) <= 2
            seen += [item["id"] for item in page["items"]]
            if not page["next"]:
                break
            params["next"] = page["next"]
        assert seen == list(reversed(ids))
        assert pages >= 3
        item = page["items"][-1]
        assert item["name"] == f"{name}-0"
        assert item["total"] == 4
        assert item["queues"] == ["nobody"]
        assert item["url"].endswith(f"/api/workflows/{item['id']}")

        # Status filter: once activated (no worker serves "nobody") they are running.
        for workflow_id in ids:
            await wait_status(http, workflow_id, "running")
        running = (await http.get("/workflows", params={"name": name, "status": "running"})).json()
        assert sorted(i["id"] for i in running["items"]) == sorted(ids)
        done = (await http.get("/workflows", params={"name": name, "status": "completed"})).json()
        assert done["items"] == []
        other = (await http.get("/workflows", params={"name": name + "-zz"})).json()
        assert other == {"items": [], "next": None}


async def test_cancel_then_rerun(api_host: HostProcess, host_settings: Settings) -> None:
    script = {"left": Behavior(duration_s=30), "*": Behavior()}
    async with workers(host_settings, script) as worker, client(api_host) as http:
        workflow_id = (await submit(http, diamond(name="cancelme"))).json()["id"]
        deadline = time.monotonic() + WAIT_S
        while (await http.get(f"/workflows/{workflow_id}/tasks/right")).json()["state"] != (
            "completed"
        ):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)

        retry_running = await http.post(f"/workflows/{workflow_id}/retry")
        assert retry_running.status_code == 409
        assert "running" in retry_running.json()["detail"]

        cancel = await http.post(f"/workflows/{workflow_id}/cancel", params={"reason": "test"})
        assert cancel.status_code == 202, cancel.text
        assert cancel.json()["cancel_requested"] is True
        again = await http.post(f"/workflows/{workflow_id}/cancel")
        assert again.status_code == 202
        body = await wait_status(http, workflow_id, "cancelled")
        assert body["tasks"]["left"]["state"] == "cancelled"
        assert body["tasks"]["join"]["state"] == "cancelled"
        assert body["tasks"]["right"]["state"] == "completed"

        worker.script["left"] = Behavior()
        retry = await http.post(f"/workflows/{workflow_id}/retry")
        assert retry.status_code == 202, retry.text
        assert retry.json()["run"] == 2
        body = await wait_status(http, workflow_id, "completed", "failed")
    assert body["status"] == "completed", body
    assert body["run"] == 2
    # Attempt numbers only grow, past every attempt run 1 may have sent: its one try, and for a
    # task with parents a fresh attempt a lost pass may have sent for other inputs (engine.md).
    assert body["tasks"]["left"]["attempt"] == 3
    assert body["tasks"]["right"]["attempt"] == 1  # completed tasks are not rerun


async def test_failed_workflow_reruns_from_failure(
    api_host: HostProcess, host_settings: Settings
) -> None:
    script = {"right": Behavior(always_fail=True, exit_code=3, error="boom"), "*": Behavior()}
    async with workers(host_settings, script) as worker, client(api_host) as http:
        workflow_id = (await submit(http, diamond(name="rerun"))).json()["id"]
        body = await wait_status(http, workflow_id, "failed", "completed")
        assert body["status"] == "failed"
        assert body["tasks"]["right"]["exit_code"] == 3
        assert body["tasks"]["join"]["state"] == "upstream_failed"
        assert body["error"]
        detail = (await http.get(f"/workflows/{workflow_id}/tasks/right")).json()
        assert detail["state"] == "failed"
        assert "boom" in detail["error"]

        worker.script["right"] = Behavior()
        assert (await http.post(f"/workflows/{workflow_id}/retry")).status_code == 202
        body = await wait_status(http, workflow_id, "completed", timeout_s=WAIT_S)
    assert body["run"] == 2
    assert body["tasks"]["prep"]["attempt"] == 1
    assert body["tasks"]["right"]["attempt"] == 2


async def test_health_and_openapi(api_host: HostProcess, host_settings: Settings) -> None:
    async with client(api_host) as http:
        health = await http.get("/health")
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "ok"
        assert body["storage"] == "reachable"
        assert isinstance(body["coordinator"]["lease_held"], bool)
        assert body["event_queue"]["name"] == host_settings.names.event_queue
        # The depths are exact only where nothing consumes the queues: test_openapi.py checks
        # them on a host without triggers.
        spec = await http.get("/openapi.json")
        assert spec.status_code == 200
        assert spec.json()["openapi"].startswith("3.")
        assert json.loads(spec.content)["paths"]["/workflows"]["post"]


@pytest.fixture
def real_worker(host_env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """A real worker agent (subprocess) serving the queue ``realq``; yields its log path."""
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "worker_agent", "realq", "--work-dir", str(tmp_path),
             "--idle-timeout-s", "60"],
            cwd=REPO_ROOT, env={**os.environ, **host_env}, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        yield log_path
    finally:
        worker.terminate()
        worker.wait(timeout=30)


async def test_real_worker_output_and_log(api_host: HostProcess, real_worker: Path) -> None:
    definition = {
        "name": "real",
        "tasks": [
            {
                "name": "hello",
                "queue": "realq",
                "kwargs": {"cmd": 'echo hello from dagq; echo \'{"answer": 42}\' > "$DAGQ_OUTPUT"'},
            }
        ],
    }
    async with client(api_host) as http:
        response = await http.post("/workflows", json=definition)
        assert response.status_code == 201
        workflow_id = response.json()["id"]
        body = await wait_status(http, workflow_id, "completed", "failed")
        assert body["status"] == "completed", f"see {real_worker}"
        response = await http.get(f"/workflows/{workflow_id}/tasks/hello")
        detail = assert_documented(response, "/workflows/{id}/tasks/{task}")
        assert detail["exit_code"] == 0
        # {id}/{incarnation}/hello/1/log.txt: the incarnation is drawn at submit, not shown
        blob = detail["log"]["blob"]
        incarnation = int(blob.split("/")[1])
        assert blob == ResourceNames.log_blob(workflow_id, "hello", 1, incarnation)
        log = await http.get(f"/workflows/{workflow_id}/tasks/hello/log")
        assert log.status_code == 200
        assert "hello from dagq" in log.text
        assert log.headers["content-type"].startswith("text/plain")
        output = await http.get(f"/workflows/{workflow_id}/tasks/hello/output")
        assert output.json() == {"answer": 42}


async def test_events_wait_while_another_coordinator_holds_the_lease(
    api_host: HostProcess, host_settings: Settings
) -> None:
    async with open_storage(host_settings) as storage, client(api_host) as http:
        assert (await http.get("/health")).status_code == 200  # the app has created its resources
        deadline = time.monotonic() + WAIT_S
        lease_id = None
        while lease_id is None:  # the app's coordinator holds it during its passes
            assert time.monotonic() < deadline
            lease_id = await storage.lease.acquire(60)
            await asyncio.sleep(0.05)
        try:
            # A cached root: the coordinator activates it (plain roots are sent by the submit).
            leased = diamond(name="leased", queue="nobody").replace(
                '{cmd: "echo prep"}', '{cmd: "echo prep"}\n    cache: true'
            )
            workflow_id = (await submit(http, leased)).json()["id"]
            await asyncio.sleep(4)  # several trigger invocations and sweeps find the lease taken
            body = (await http.get(f"/workflows/{workflow_id}", params={"tasks": "false"})).json()
            assert body["status"] == "pending"
            health = (await http.get("/health")).json()
            assert health["coordinator"]["lease_held"] is True
            assert health["poison_queue"]["depth"] == 0  # not pushed toward the poison queue
        finally:
            await storage.lease.release(lease_id)
        await wait_status(http, workflow_id, "running")  # the event was not lost
