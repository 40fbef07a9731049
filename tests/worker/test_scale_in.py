"""Scale-in protection: a VM of the pool protects itself from scale-in while one of its agents runs
a task and clears it when none does, through the instance metadata service and ARM. Both are a local
fake on 127.0.0.1 here (real HTTP); nothing is contacted unless the settings turn it on."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.worker.agents import create_workflow, read_events, running_agent, send_task
from worker_agent.config import WorkerSettings
from worker_agent.scale_in import API_VERSION, ARM_RESOURCE, ScaleInProtection

Make = Callable[..., WorkerSettings]

INSTANCE = (
    "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/"
    "virtualMachineScaleSets/vmss-gpu/virtualMachines/3"
)
CLIENT_ID = "00000000-0000-0000-0000-000000000001"
PLAIN_VM = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1"


class FakeAzure:
    """The instance metadata service (resource id, managed identity token) and ARM's instance
    update, as much as the agent uses."""

    def __init__(self, resource_id: str = INSTANCE) -> None:
        self.puts: list[dict[str, Any]] = []
        self.token_requests: list[dict[str, list[str]]] = []
        self.status = 200
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if self.headers["Metadata"] != "true":
                    self._answer(400, b"Metadata header required")
                elif url.path == "/metadata/instance/compute/resourceId":
                    self._answer(200, resource_id.encode())
                elif url.path == "/metadata/identity/oauth2/token":
                    fake.token_requests.append(parse_qs(url.query))
                    token = {"access_token": "arm-token", "expires_on": "9999999999"}
                    self._answer(200, json.dumps(token).encode())
                else:
                    self._answer(404, b"")

            def do_PUT(self) -> None:
                url = urlsplit(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.puts.append(
                    {
                        "path": url.path,
                        "query": parse_qs(url.query),
                        "auth": self.headers["Authorization"],
                        "protect": body["properties"]["protectionPolicy"]["protectFromScaleIn"],
                    }
                )
                self._answer(fake.status, b"{}")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def protections(self) -> list[bool]:
        return [put["protect"] for put in self.puts]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def azure() -> Iterator[FakeAzure]:
    fake = FakeAzure()
    yield fake
    fake.close()


def _protection(azure: FakeAzure, work_dir: Path, worker_id: str) -> ScaleInProtection:
    return ScaleInProtection(
        metadata_url=f"{azure.url}/metadata/scheduledevents?api-version=2020-07-01",
        arm_url=azure.url,
        client_id=CLIENT_ID,
        work_dir=work_dir,
        worker_id=worker_id,
    )


def test_the_vm_is_protected_while_any_of_its_agents_is_busy(
    azure: FakeAzure, tmp_path: Path
) -> None:
    gpu, cpu = _protection(azure, tmp_path, "vm-gpu"), _protection(azure, tmp_path, "vm-cpu")
    assert gpu.busy() is True
    assert cpu.busy() is True
    assert gpu.idle() is None  # cpu still runs a task: the VM stays protected
    assert azure.protections == [True, True]
    assert cpu.idle() is True
    assert azure.protections == [True, True, False]
    # Each call is ARM's instance update of this very instance, with the worker identity's token.
    for put in azure.puts:
        assert put["path"] == INSTANCE
        assert put["query"] == {"api-version": [API_VERSION]}
        assert put["auth"] == "Bearer arm-token"
    assert azure.token_requests[0]["resource"] == [ARM_RESOURCE]
    assert azure.token_requests[0]["client_id"] == [CLIENT_ID]
    assert len(azure.token_requests) == 2  # one per agent, then cached


def test_a_failure_is_logged_and_costs_only_the_protection(
    azure: FakeAzure, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    azure.status = 403  # e.g. the role assignment has not propagated yet
    protection = _protection(azure, tmp_path, "vm-gpu")
    assert protection.busy() is False
    assert "could not set scale-in protection" in caplog.text
    azure.status = 200
    assert protection.idle() is True


def test_off_a_scale_set_nothing_is_protected(tmp_path: Path) -> None:
    fake = FakeAzure(resource_id=PLAIN_VM)
    try:
        assert _protection(fake, tmp_path, "vm").busy() is False
    finally:
        fake.close()
    assert fake.puts == []


def test_scale_in_protection_is_off_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGQ_WORKER_SCALE_IN_PROTECTION", raising=False)
    assert WorkerSettings(queues=["gpu"]).scale_in_protection is False
    monkeypatch.setenv("DAGQ_WORKER_SCALE_IN_PROTECTION", "true")
    assert WorkerSettings(queues=["gpu"]).scale_in_protection is True


async def test_the_agent_protects_its_vm_while_a_task_runs(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Make,
    azure: FakeAzure,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_CLIENT_ID", CLIENT_ID)
    marker = tmp_path / "protected-while-running"
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "train", "sleep 0.5")
    settings = worker_settings(
        scale_in_protection=True,
        metadata_url=f"{azure.url}/metadata/scheduledevents?api-version=2020-07-01",
        arm_url=azure.url,
    )
    async with running_agent(settings, azure_storage):
        await read_events(azure_storage, 1)
        marker.write_text(json.dumps(azure.protections))
    # Cleared at start (a crashed agent may have left it on), on while the task ran, off after.
    assert json.loads(marker.read_text())[:2] == [False, True]
    assert azure.protections[-1] is False
    assert True not in azure.protections[2:]


async def test_without_the_setting_the_agent_calls_nothing(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Make,
    azure: FakeAzure,
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "train", "true")
    settings = worker_settings(
        metadata_url=f"{azure.url}/metadata/scheduledevents?api-version=2020-07-01",
        arm_url=azure.url,
    )
    async with running_agent(settings, azure_storage):
        await read_events(azure_storage, 1)
    assert azure.puts == []
    assert azure.token_requests == []
