"""The AKS worker manifests parse, scale on the queues the code names, authenticate KEDA and the
pods with the worker identity, and give running tasks time to finish or be handed back."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.names import ResourceNames
from shared.settings import Settings
from tests.infra.bicep_model import INFRA, deployment
from tests.infra.offline_checks import AKS_VALUES
from worker_agent.cli import build_parser
from worker_agent.config import WorkerSettings

AKS = INFRA / "aks"
# Read by azure-monitor-opentelemetry, with the worker's Entra ID token (worker_agent/telemetry.py).
TELEMETRY = {"APPLICATIONINSIGHTS_CONNECTION_STRING", "APPLICATIONINSIGHTS_AUTHENTICATION_STRING"}
NOT_OUTPUTS = {"WORKER_IMAGE", "APPLICATIONINSIGHTS_CONNECTION_STRING"}
"""The image you built, and the App Insights connection string, which the deployment keeps out of
its outputs (infra/README.md reads it with az)."""
VALUES = AKS_VALUES
"""What `envsubst` fills in (infra/README.md): deployment outputs, plus the image you built."""


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(AKS.glob("*.yaml")):
        text = string.Template(path.read_text()).substitute(VALUES)  # KeyError: unknown variable
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in manifests() if doc["kind"] == kind]


def pod_specs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod template, workload) of every Deployment and ScaledJob."""
    found = [(d["spec"]["template"], d) for d in of_kind("Deployment")]
    found += [(d["spec"]["jobTargetRef"]["template"], d) for d in of_kind("ScaledJob")]
    assert found
    return found


def queue_of(template: dict[str, Any]) -> str:
    [container] = template["spec"]["containers"]
    args = build_parser().parse_args(container["command"][1:])
    assert container["command"][0] == "dagq-worker"
    [queue] = args.queue_args
    return str(queue)


def test_variables_are_deployment_outputs_or_the_image() -> None:
    main, _ = deployment()
    used: set[str] = set()
    for path in AKS.glob("*.yaml"):
        used |= set(re.findall(r"\$\{(\w+)\}", path.read_text()))
    assert used == set(VALUES)
    assert used - NOT_OUTPUTS <= set(main.outputs)
    assert not NOT_OUTPUTS & set(main.outputs)


def test_every_workload_is_scaled_by_keda_on_its_own_task_queue() -> None:
    names = ResourceNames(VALUES["DAGQ_PREFIX"])
    scalers = {d["spec"]["scaleTargetRef"]["name"]: d for d in of_kind("ScaledObject")}
    for template, workload in pod_specs():
        is_job = workload["kind"] == "ScaledJob"
        scaler = workload if is_job else scalers[workload["metadata"]["name"]]
        [trigger] = scaler["spec"]["triggers"]
        assert trigger["type"] == "azure-queue"
        meta = trigger["metadata"]
        assert meta["queueName"] == names.task_queue(queue_of(template))
        assert meta["accountName"] == VALUES["DAGQ_STORAGE_ACCOUNT"]
        assert int(meta["queueLength"]) >= 1
        assert meta["activationQueueLength"] == "0"
        assert trigger["authenticationRef"]["name"] in {
            a["metadata"]["name"] for a in of_kind("TriggerAuthentication")
        }


def test_scaled_objects_scale_to_zero() -> None:
    for scaler in of_kind("ScaledObject"):
        assert scaler["spec"]["minReplicaCount"] == 0
    for deployment_ in of_kind("Deployment"):
        assert deployment_["spec"]["replicas"] == 0  # KEDA owns the count


def test_keda_authenticates_with_workload_identity() -> None:
    [auth] = of_kind("TriggerAuthentication")
    assert auth["spec"]["podIdentity"] == {
        "provider": "azure-workload",
        "identityId": VALUES["WORKER_CLIENT_ID"],
    }


def test_pods_use_the_federated_service_account() -> None:
    _, modules = deployment()
    identity = modules["identity"]
    [account] = of_kind("ServiceAccount")
    # identity.bicep federates exactly this namespace and service account.
    assert account["metadata"]["namespace"] == identity.default("aksNamespace")
    assert account["metadata"]["name"] == identity.default("aksServiceAccountName")
    annotations = account["metadata"]["annotations"]
    assert annotations["azure.workload.identity/client-id"] == VALUES["WORKER_CLIENT_ID"]
    for template, workload in pod_specs():
        assert workload["metadata"]["namespace"] == account["metadata"]["namespace"]
        assert template["metadata"]["labels"]["azure.workload.identity/use"] == "true"
        assert template["spec"]["serviceAccountName"] == account["metadata"]["name"]


def test_pods_run_on_spot_nodes() -> None:
    for template, _ in pod_specs():
        spec = template["spec"]
        assert spec["nodeSelector"]["kubernetes.azure.com/scalesetpriority"] == "spot"
        assert {
            "key": "kubernetes.azure.com/scalesetpriority",
            "operator": "Equal",
            "value": "spot",
            "effect": "NoSchedule",
        } in spec["tolerations"]


def test_gpu_workers_are_scaled_jobs_that_request_gpus() -> None:
    [job] = of_kind("ScaledJob")
    template = job["spec"]["jobTargetRef"]["template"]
    assert queue_of(template) == "gpu"
    [container] = template["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] >= 1
    env = {e["name"]: e["value"] for e in container["env"]}
    # The agent exits when idle, which completes the Job (scale to zero).
    assert float(env["DAGQ_WORKER_IDLE_TIMEOUT_S"]) > 0


@pytest.mark.parametrize("kind", ["Deployment", "ScaledJob"])
def test_grace_period_covers_the_agents_shutdown(kind: str) -> None:
    kill_grace = WorkerSettings.model_fields["kill_grace_s"].default
    default_grace = WorkerSettings.model_fields["shutdown_grace_s"].default
    for template, workload in pod_specs():
        if workload["kind"] != kind:
            continue
        [container] = template["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        grace = float(env.get("DAGQ_WORKER_SHUTDOWN_GRACE_S", default_grace))
        assert template["spec"]["terminationGracePeriodSeconds"] > grace + kill_grace


def test_container_environment_is_what_the_agent_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    storage_names = {name for names in Settings.env_names().values() for name in names}
    worker_names = {f"DAGQ_WORKER_{name.upper()}" for name in WorkerSettings.model_fields}
    for template, _ in pod_specs():
        [container] = template["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        unknown = set(env) - storage_names - worker_names - TELEMETRY
        assert not unknown
        with monkeypatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            assert Settings().storage_account == VALUES["DAGQ_STORAGE_ACCOUNT"]
            WorkerSettings()  # every value is valid


def test_manifest_files_are_the_documented_ones() -> None:
    documented = set(re.findall(r"infra/aks/([\w-]+\.yaml)", (INFRA / "README.md").read_text()))
    assert documented == {Path(p).name for p in AKS.glob("*.yaml")}


TASK_USER_CAPABILITIES = {"SETUID", "SETGID", "CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL"}
"""What an agent needs to run tasks as another user and clean up after them: nothing more."""


def test_tasks_run_as_another_user_than_the_agent() -> None:
    # Before: agent and tasks shared uid 10001, and a task read the agent's environment and the
    # workload identity token. Now the agent (root, few capabilities) runs tasks as dagq-task.
    dockerfile = (AKS / "worker.Dockerfile").read_text()
    for template, _ in pod_specs():
        assert template["spec"]["securityContext"]["runAsUser"] == 0
        [container] = template["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert re.search(rf"useradd .*{env['DAGQ_WORKER_TASK_USER']}$", dockerfile, re.MULTILINE)
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert set(container["securityContext"]["capabilities"]["add"]) == TASK_USER_CAPABILITIES


def test_example_image_runs_as_the_user_the_pods_expect() -> None:
    dockerfile = (AKS / "worker.Dockerfile").read_text()
    users = {t["spec"]["securityContext"]["runAsUser"] for t, _ in pod_specs()}
    assert users == {int(re.findall(r"^USER (\d+)$", dockerfile, re.MULTILINE)[-1])} == {0}
    assert "'/src[worker]'" in dockerfile  # the agent with its Application Insights exporter


def test_every_pod_watches_scheduled_events_and_sends_telemetry_with_its_identity() -> None:
    for template, _ in pod_specs():
        [container] = template["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["DAGQ_WORKER_SCHEDULED_EVENTS"] == "true"
        # ... but never acknowledge: another pod on the node may still be handing back.
        assert env["DAGQ_WORKER_SCHEDULED_EVENTS_ACK"] == "false"
        assert env["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == (
            f"ClientId={VALUES['WORKER_CLIENT_ID']};Authorization=AAD"
        )


def test_keda_counts_every_message_and_the_scaled_job_runs_one_task_per_job() -> None:
    # queueLengthStrategy "all" (KEDA >= 2.16; older versions count all messages anyway) includes
    # the
    # messages running tasks hold invisible; with one task per Job, the default ScaledJob strategy
    # (queue length - running jobs) then starts exactly one Job per waiting task.
    for workload in of_kind("ScaledObject") + of_kind("ScaledJob"):
        for trigger in workload["spec"]["triggers"]:
            assert trigger["metadata"]["queueLengthStrategy"] == "all"
    for job in of_kind("ScaledJob"):
        assert job["spec"]["scalingStrategy"]["strategy"] == "default"
        [trigger] = job["spec"]["triggers"]
        assert trigger["metadata"]["queueLength"] == "1"
        [container] = job["spec"]["jobTargetRef"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["DAGQ_WORKER_CONCURRENCY"] == "1"
        assert int(env["DAGQ_WORKER_IDLE_TIMEOUT_S"]) > 0  # an extra Job exits when idle
