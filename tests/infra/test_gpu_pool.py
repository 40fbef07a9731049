"""The optional GPU pool: a VM Scale Set (Spot or regular, terminate notifications on Regular VMs,
no inbound access) whose cloud-init installs the worker agent and runs one systemd service per
queue."""

from __future__ import annotations

import base64
import re
import shlex
from typing import Any

import pytest
import yaml

from shared.settings import Settings
from tests.infra.bicep_model import INFRA, MODULES, REPO, Template, deployment, symbol
from tests.infra.rendering import (
    PLACEHOLDER,
    SAMPLE_PARAMS,
    TEMPLATE,
    env_file,
    gpu_pool,
    render,
    substitutions,
    vmss_body,
    write_file,
)
from worker_agent.cli import build_parser
from worker_agent.config import WorkerSettings


def test_pool_is_optional_and_off_by_default() -> None:
    main, _ = deployment()
    assert main.default("deployGpuPool") is False
    assert Template.condition(main.modules["gpuPool"]) == "deployGpuPool"


def test_spot_or_regular_with_eviction_policy_and_max_price() -> None:
    pool = gpu_pool()
    assert pool.decorator("priority", "allowed") == ["Spot", "Regular"]
    assert pool.default("vmSku") == "Standard_NC4as_T4_v3"
    profile = vmss_body()["properties"]["virtualMachineProfile"]
    assert profile["priority"] == "Spot"
    assert profile["evictionPolicy"] == "Delete"
    assert profile["billingProfile"] == {"maxPrice": -1}
    regular = vmss_body(priority="Regular")["properties"]
    assert regular["virtualMachineProfile"]["evictionPolicy"] is None
    assert regular["virtualMachineProfile"]["billingProfile"] is None


def test_only_delete_eviction_because_autoscale_owns_the_count() -> None:
    # "Use eviction policy Delete with autoscale": a deallocated Spot VM still counts toward the
    # scale set's capacity (and quota), so autoscale would never replace it.
    main, _ = deployment()
    assert gpu_pool().decorator("evictionPolicy", "allowed") == ["Delete"]
    assert main.decorator("gpuEvictionPolicy", "allowed") == ["Delete"]


def test_no_spot_restore_because_autoscale_refills_the_pool() -> None:
    # "Try & restore is disabled in scale sets that use Autoscale" (use-spot doc): the pool always
    # has autoscale, so the autoscale rules refill it, and the template does not claim otherwise.
    for priority in ("Spot", "Regular"):
        assert "spotRestorePolicy" not in vmss_body(priority=priority)["properties"]
    assert "spotRestorePolicy" not in (MODULES / "gpu-vmss.bicep").read_text()


def test_terminate_notification_only_on_regular_vms() -> None:
    # Terminate notifications "cannot be enabled on Spot instances" (VMSS terminate-notification
    # doc); a Spot VM's warning is its Preempt event (30 s).
    spot = vmss_body()["properties"]["virtualMachineProfile"]
    assert spot.get("scheduledEventsProfile") is None
    regular = vmss_body(priority="Regular")["properties"]["virtualMachineProfile"]
    notice = regular["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice["enable"] is True
    assert re.fullmatch(r"PT([5-9]|1[0-5])M", notice["notBeforeTimeout"])


def test_vms_are_closed_to_inbound_traffic_and_use_the_worker_identity() -> None:
    body = vmss_body()
    properties = body["properties"]
    assert properties["overprovision"] is False  # extra VMs would take tasks and then vanish
    linux = properties["virtualMachineProfile"]["osProfile"]["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert body["identity"]["type"] == "UserAssigned"
    network = Template(MODULES / "gpu-network.bicep", {"location": "x", "name": "pool"})
    [nsg] = network.resources_of_type("Microsoft.Network/networkSecurityGroups").values()
    assert Template.body(nsg)["properties"]["securityRules"] == []  # no inbound rule
    nic = properties["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert nic[0]["properties"]["networkSecurityGroup"]["id"] == SAMPLE_PARAMS["nsgId"]
    ip = nic[0]["properties"]["ipConfigurations"][0]["properties"]
    assert ip["subnet"]["id"] == SAMPLE_PARAMS["subnetId"]
    [vnet] = network.resources_of_type("Microsoft.Network/virtualNetworks").values()
    subnet = Template.body(vnet)["properties"]["subnets"][0]["properties"]
    assert subnet["serviceEndpoints"] == [{"service": "Microsoft.Storage"}]


def test_every_placeholder_is_filled() -> None:
    pool = gpu_pool()
    assert set(PLACEHOLDER.findall(TEMPLATE.read_text())) == {
        PLACEHOLDER.fullmatch(key).group(1)  # type: ignore[union-attr]
        for key in substitutions(pool)
    }
    assert not PLACEHOLDER.search(render(pool))


def test_custom_data_is_cloud_config_within_64_kb() -> None:
    text = render(gpu_pool())
    assert text.startswith("#cloud-config\n")
    assert isinstance(yaml.safe_load(text), dict)
    assert len(base64.b64encode(text.encode())) < 64 * 1024


def test_one_restarting_service_per_queue() -> None:
    cloud_init = yaml.safe_load(render(gpu_pool()))
    unit = write_file(cloud_init, "/etc/systemd/system/dagq-worker@.service")
    lines = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#")
    )
    assert lines["Restart"] == "on-failure"
    assert lines["KillMode"] == "mixed"
    # systemd must wait longer than the agent's own shutdown: task grace + kill grace.
    env = env_file(cloud_init)
    kill_grace = WorkerSettings.model_fields["kill_grace_s"].default
    assert int(lines["TimeoutStopSec"]) > float(env["DAGQ_WORKER_SHUTDOWN_GRACE_S"]) + kill_grace
    # ExecStart is a real dagq-worker command line (the console script of pyproject.toml).
    argv = shlex.split(lines["ExecStart"].replace("%i", "gpu"))
    assert argv[0] == "/opt/dagq/venv/bin/dagq-worker"
    assert build_parser().parse_args(argv[1:]).queue_args == ["gpu"]
    # ... started once per queue by start-workers.sh.
    script = write_file(cloud_init, "/opt/dagq/start-workers.sh")
    assert "for queue in gpu gpu-large A100_80GB; do" in script
    assert 'systemctl enable --now "dagq-worker@${queue}.service"' in script


def test_worker_environment_is_what_the_agent_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    env = env_file(yaml.safe_load(render(gpu_pool())))
    storage_names = {name for names in Settings.env_names().values() for name in names}
    worker_names = {f"DAGQ_WORKER_{name.upper()}" for name in WorkerSettings.model_fields}
    telemetry = {
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
        "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
    }
    unknown = set(env) - storage_names - worker_names - telemetry
    assert not unknown
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings, worker = Settings(), WorkerSettings()
    assert settings.storage_account == SAMPLE_PARAMS["storageAccountName"]
    assert settings.storage_client_id == SAMPLE_PARAMS["workerIdentityClientId"]
    assert settings.prefix == SAMPLE_PARAMS["prefix"]
    assert worker.shutdown_grace_s == gpu_pool().default("shutdownGraceSeconds")


def test_package_spec_reaches_pip_unquoted() -> None:
    cloud_init = yaml.safe_load(render(gpu_pool()))
    requirements = write_file(cloud_init, "/etc/dagq/requirements.txt")
    assert requirements.strip() == SAMPLE_PARAMS["workerPackage"]
    assert [
        "/opt/dagq/venv/bin/pip",
        "install",
        "--quiet",
        "-c",
        "/etc/dagq/constraints.txt",
        "-r",
        "/etc/dagq/requirements.txt",
    ] in cloud_init["runcmd"]
    # The versions CI tested reach the VM intact, one pin per line.
    constraints = write_file(cloud_init, "/etc/dagq/constraints.txt")
    assert constraints.split() == (REPO / "constraints.txt").read_text().split()


def test_worker_command_output_is_a_valid_command_line() -> None:
    main, _ = deployment()
    template = main.outputs["WORKER_COMMAND"]["value"]
    command = re.sub(r"\$\{[^}]*\}", "X", template.replace("${join(gpuQueues, ' ')}", "gpu"))
    argv = shlex.split(command)
    assert argv[0] == "AZURE_CLIENT_ID=X"
    assert argv[1] == "dagq-worker"
    args = build_parser().parse_args(argv[2:])
    assert args.queue_args == ["gpu"]
    assert "--account ${storage.outputs.name} --prefix ${prefix}" in template


def _problem(**params: Any) -> Any:
    return Template(INFRA / "main.bicep", params).env["gpuPoolProblem"]


def test_a_pool_whose_agents_cannot_start_is_refused_at_deploy_time() -> None:
    package, key = "dagq[worker] @ https://x/dagq.whl", "ssh-ed25519 AAAA"
    assert _problem() == ""  # no pool: nothing to check
    assert "needs workerPackage" in _problem(deployGpuPool=True, gpuAdminSshPublicKey=key)
    assert "needs gpuAdminSshPublicKey" in _problem(deployGpuPool=True, workerPackage=package)
    unknown = _problem(
        deployGpuPool=True, workerPackage=package, gpuAdminSshPublicKey=key,
        gpuQueues=["gpu", "a100"],
    )  # fmt: skip
    assert "every queue in gpuQueues (gpu, a100) must also be in taskQueues (cpu, gpu)" in unknown
    assert _problem(deployGpuPool=True, workerPackage=package, gpuAdminSshPublicKey=key) == ""
    # The problem reaches the deployment through fail(), in the values the pool needs.
    main = Template(INFRA / "main.bicep")
    params = Template.body(main.modules["gpuPool"])["params"]
    for name in ("workerPackage", "adminSshPublicKey"):
        conditional = params[name]["operator"]
        assert conditional["type"] == "conditional"
        assert conditional["operands"]["false_value"]["function"]["type"] == "fail"
    # And the module itself refuses empty values (a second line of defence).
    pool = Template(MODULES / "gpu-vmss.bicep")
    for name in ("workerPackage", "adminSshPublicKey"):
        assert pool.decorator(name, "min_length") == 1


def test_tasks_run_as_their_own_user_who_cannot_read_the_settings_or_reach_imds() -> None:
    cloud_init = yaml.safe_load(render(gpu_pool()))
    env = env_file(cloud_init)
    user = env["DAGQ_WORKER_TASK_USER"]
    assert user == gpu_pool().default("taskUser")
    assert env["DAGQ_WORKER_SCHEDULED_EVENTS"] == "true"
    [settings] = [f for f in cloud_init["write_files"] if f["path"] == "/etc/dagq/worker.env"]
    assert settings["permissions"] == "0600"
    assert settings["owner"] == "root:root"
    unit = write_file(cloud_init, "/etc/systemd/system/dagq-worker@.service")
    assert "User=root" in unit
    assert "Delegate=yes" in unit  # the agent may create a cgroup per task
    assert "Requires=dagq-task-firewall.service" in unit
    firewall = write_file(cloud_init, "/opt/dagq/task-firewall.sh")
    assert "169.254.169.254" in firewall
    assert "168.63.129.16" in firewall
    assert f"--uid-owner {user} -j REJECT" in firewall
    assert ["useradd", "--system", "--create-home", "--home-dir", f"/var/lib/{user}", "--shell",
            "/usr/sbin/nologin", user] in cloud_init["runcmd"]  # fmt: skip


def test_workers_may_protect_their_own_instances_from_scale_in_and_nothing_else() -> None:
    # Scale-in picks VMs by policy (NewestVM), not by idleness: the agent sets protectFromScaleIn
    # on its own instance while busy (worker_agent/scale_in.py), with a custom role that allows
    # only reading and updating the scale set's instances, assigned on the scale set alone.
    pool = gpu_pool()
    [definition] = pool.resources_of_type("Microsoft.Authorization/roleDefinitions").values()
    role = pool.evaluate(Template.body(definition))
    [permissions] = role["properties"]["permissions"]
    assert sorted(permissions["actions"]) == [
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write",
    ]
    assert permissions.get("notActions", []) == []
    assert permissions.get("dataActions", []) == []
    assert role["properties"]["type"] == "CustomRole"
    [assignment] = pool.resources_of_type("Microsoft.Authorization/roleAssignments").values()
    body = Template.body(assignment)
    assert body["scope"] == "vmss"  # the scale set, not the resource group
    assert symbol(body["properties"]["roleDefinitionId"]) == "scaleInProtectionRole"
    assert symbol(body["properties"]["principalId"]) == "workerIdentity"
    assert body["properties"]["principalType"] == "ServicePrincipal"
    # The agents on the VMs turn it on; nothing else in the worker's settings does.
    env = env_file(yaml.safe_load(render(pool)))
    assert env["DAGQ_WORKER_SCALE_IN_PROTECTION"] == "true"
    assert WorkerSettings.model_fields["scale_in_protection"].default is False


def test_identity_bicep_keeps_only_storage_and_telemetry_roles() -> None:
    # The pool's role lives with the pool (its scope is the scale set); identity.bicep is unchanged.
    assert "virtualMachineScaleSets" not in (MODULES / "identity.bicep").read_text()


def test_the_agents_are_told_the_vm_size_the_pool_runs() -> None:
    # `dagq cost` prices the pool's VM-hours by the size its agents note (issue 28, item 12).
    env = env_file(yaml.safe_load(render(gpu_pool(vmSku="Standard_NC24ads_A100_v4"))))
    assert env["DAGQ_WORKER_VM_SIZE"] == "Standard_NC24ads_A100_v4"
    assert "vm_size" in WorkerSettings.model_fields
