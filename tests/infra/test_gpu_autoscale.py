"""The GPU pool follows its queues: autoscale on each queue's message count (out when tasks wait,
in when every queue holds fewer tasks than VMs, busy VMs protected), a custom image, a setup
hook that runs before the workers, and an idle poll that does not cost a receive every half
second."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

from shared.names import ResourceNames
from tests.infra.bicep_model import INFRA, REPO, Template, deployment, symbol
from tests.infra.provisioning_sandbox import first_boot
from tests.infra.rendering import SAMPLE_PARAMS, env_file, gpu_pool, render, vmss_body
from worker_agent.config import WorkerSettings


def _autoscale(**params: Any) -> dict[str, Any]:
    """The autoscale setting, with the storage account's id (only Azure knows it) as 'ST'."""
    pool = gpu_pool(**params)
    known = {"storageAccount": {"id": "ST"}}
    rules = {
        name: pool.evaluate(pool.tree["variables"][name]["value"], known)
        for name in ("scaleOutRules", "scaleInRules")
    }
    [setting] = pool.resources_of_type("Microsoft.Insights/autoscalesettings").values()
    body: dict[str, Any] = pool.evaluate(Template.body(setting), rules)
    return body


def _queue_of(rule: dict[str, Any]) -> str:
    uri = str(rule["metricTrigger"]["metricResourceUri"])
    assert uri.startswith("ST/services/queue/queues/")  # autoscale's form for a queue's length
    return uri.rsplit("/queues/", 1)[1]


def test_the_pool_scales_out_on_each_queue_and_in_to_zero_when_all_are_idle() -> None:
    body = _autoscale()
    [setting] = gpu_pool().resources_of_type("Microsoft.Insights/autoscalesettings").values()
    assert symbol(Template.body(setting)["properties"]["targetResourceUri"]) == "vmss"
    [profile] = body["properties"]["profiles"]
    assert profile["capacity"] == {"minimum": "0", "maximum": "4", "default": "0"}
    names = ResourceNames(SAMPLE_PARAMS["prefix"])
    queues = [names.task_queue(queue) for queue in SAMPLE_PARAMS["queues"]]
    out = [r for r in profile["rules"] if r["scaleAction"]["direction"] == "Increase"]
    down = [r for r in profile["rules"] if r["scaleAction"]["direction"] == "Decrease"]
    assert [_queue_of(rule) for rule in out] == queues  # the names shared/names.py computes
    assert [_queue_of(rule) for rule in down] == queues
    for rule in out + down:
        assert rule["metricTrigger"]["metricName"] == "ApproximateMessageCount"
    for rule in out:
        assert rule["metricTrigger"]["operator"] == "GreaterThanOrEqual"
        assert rule["metricTrigger"]["threshold"] == 1  # tasksPerVm
    for rule in down:  # empty (no queued and no running task) for the whole window
        trigger = rule["metricTrigger"]
        assert (trigger["operator"], trigger["threshold"]) == ("LessThan", 1)
        assert trigger["timeAggregation"] == "Maximum"
        assert trigger["timeWindow"] == "PT15M"


def test_cooldowns_are_five_minutes_so_a_scale_in_does_not_block_scale_out_for_long() -> None:
    # A rule's cooldown blocks both directions: a 15-minute scale-in cooldown kept a pool from
    # scaling out for 15 minutes after each scale-in. The idle time is the rule's time window.
    [profile] = _autoscale(scaleInIdleMinutes=30)["properties"]["profiles"]
    for rule in profile["rules"]:
        assert rule["scaleAction"]["cooldown"] == "PT5M"
    down = [r for r in profile["rules"] if r["scaleAction"]["direction"] == "Decrease"]
    assert {rule["metricTrigger"]["timeWindow"] for rule in down} == {"PT30M"}


def test_the_scale_set_starts_at_the_minimum_and_autoscale_owns_the_count() -> None:
    assert vmss_body(minCapacity=2)["sku"]["capacity"] == 2
    main, _ = deployment()
    assert main.default("gpuMinCapacity") == 0
    params = Template.body(main.modules["gpuPool"])["params"]
    for name in (
        "minCapacity",
        "maxCapacity",
        "imageId",
        "installNvidiaDriver",
        "setupScriptBase64",
    ):
        assert name in params


def test_provisioning_an_existing_pool_keeps_its_live_vm_count() -> None:
    # A deployment that sets sku.capacity resets a live pool to it (deleting running VMs): once
    # the pool exists the template leaves the count to autoscale.
    sku = vmss_body(poolExists=True, minCapacity=2)["sku"]
    assert "capacity" not in sku
    assert sku["name"] == SAMPLE_PARAMS.get("vmSku", "Standard_NC4as_T4_v3")
    assert gpu_pool().default("poolExists") is False
    main, _ = deployment()
    assert main.default("gpuPoolExists") is False
    assert Template.body(main.modules["gpuPool"])["params"]["poolExists"] == "gpuPoolExists"
    # azd passes it from the environment, and sets it once the pool is there.
    parameters = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    assert parameters["gpuPoolExists"]["value"] == "${DAGQ_GPU_POOL_EXISTS=false}"
    hooks = yaml.safe_load((REPO / "azure.yaml").read_text())["hooks"]
    script = hooks["postprovision"]["posix"]["run"]
    assert "azd env set DAGQ_GPU_POOL_EXISTS true" in script
    assert "GPU_POOL_NAME" in script


def test_a_custom_image_replaces_the_marketplace_image() -> None:
    image = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/i"
    storage = vmss_body(imageId=image)["properties"]["virtualMachineProfile"]["storageProfile"]
    assert storage["imageReference"] == {"id": image}
    default = vmss_body()["properties"]["virtualMachineProfile"]["storageProfile"]
    assert default["imageReference"]["publisher"] == "Canonical"


def test_the_setup_script_runs_once_before_the_workers_start(tmp_path: Path) -> None:
    script = 'echo "it\'s: {{not a placeholder}}" > "$SANDBOX/setup-ran"\nnvidia-smi\n'
    encoded = base64.b64encode(script.encode()).decode()
    pool = gpu_pool(setupScriptBase64=encoded, installNvidiaDriver=False)
    cloud_init = yaml.safe_load(render(pool))
    boot = first_boot(cloud_init, tmp_path)
    assert boot.failures == []
    assert (tmp_path / "setup-ran").read_text() == "it's: {{not a placeholder}}\n"
    # It ran before the first worker was enabled.
    assert boot.calls.index("nvidia-smi ") < boot.calls.index(
        "systemctl enable --now dagq-worker@gpu.service"
    )


def test_idle_agents_poll_every_few_seconds() -> None:
    env = env_file(yaml.safe_load(render(gpu_pool())))
    settings = WorkerSettings(queues=["gpu"], max_poll_s=float(env["DAGQ_WORKER_MAX_POLL_S"]))
    assert settings.max_poll_s >= 5
    receives_per_day = 86400 / settings.max_poll_s
    assert receives_per_day <= 17_280  # per queue and agent, vs 172,800 at 0.5 s


def test_main_passes_the_pool_queues_it_validates() -> None:
    text = (INFRA / "main.bicep").read_text()
    assert "queues: gpuQueues" in text


def test_the_scale_in_rule_is_described_as_autoscale_reads_it() -> None:
    # The threshold is per VM: "fewer tasks than VMs", never "every queue empty".
    description = gpu_pool().tree["parameters"]["scaleInIdleMinutes"]["decorators"][0]["argument"]
    assert "fewer tasks" in description
    assert "than the pool has VMs" in description
    quickstart = (REPO / "docs" / "azure-gpu-quickstart.md").read_text()
    readme = (INFRA / "README.md").read_text()
    for text in (description, quickstart, readme):
        assert "every queue has been empty" not in " ".join(text.split())
