"""The GPU pool's cloud-init as Azure would render it, for the infra tests and `make infra-check`.

gpu-vmss.bicep fills each ``{{placeholder}}`` of infra/cloud-init/worker.yaml with one replace();
this module evaluates those replace() calls with ARM's semantics (tests/infra/arm_functions.py) and
sample parameters, standing in for the values only Azure knows.

``python -m tests.infra.rendering OUT_DIR`` writes the rendered user-data (driver on and off) for
``cloud-init schema``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from tests.infra.bicep_model import INFRA, MODULES, REPO, Opaque, Template

TEMPLATE = INFRA / "cloud-init" / "worker.yaml"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

SAMPLE_PARAMS: dict[str, Any] = {
    "location": "swedencentral",
    "name": "vmss-gpu-abcdefghijklm",
    "adminSshPublicKey": "ssh-ed25519 AAAA... me@example",
    "workerIdentityId": "/subscriptions/x/resourceGroups/rg/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/id-worker",
    "workerIdentityClientId": "00000000-0000-0000-0000-000000000001",
    "subnetId": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/"
    "virtualNetworks/vmss-gpu-abcdefghijklm-vnet/subnets/workers",
    "nsgId": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/"
    "networkSecurityGroups/vmss-gpu-abcdefghijklm-nsg",
    "storageAccountName": "stabcdefghijklm",
    "prefix": "dagq",
    "applicationInsightsName": "appi-abcdefghijklm",
    # Long values, to check the 64 KB customData limit with room to spare.
    "workerConstraints": (REPO / "constraints.txt").read_text(),
    "workerPackage": "dagq[worker] @ https://example.blob.core.windows.net/wheels/"
    + "a" * 400
    + "/dagq-0.1.0-py3-none-any.whl",
    "queues": ["gpu", "gpu-large", "A100_80GB"],
}


# Values only Azure knows, as long as they get (the 64 KB check).
AZURE_VALUES = {
    "applicationInsights.properties.ConnectionString": "InstrumentationKey="
    + "0" * 36
    + ";IngestionEndpoint=https://swedencentral-0.in.applicationinsights.azure.com/;LiveEndpoint="
    + "https://x/" * 3,
}


def gpu_pool(**overrides: Any) -> Template:
    """gpu-vmss.bicep with SAMPLE_PARAMS (and ``overrides``)."""
    return Template(MODULES / "gpu-vmss.bicep", {**SAMPLE_PARAMS, **overrides})


def substitutions(pool: Template) -> dict[str, str]:
    """Placeholder -> value, read from the chain of replace() variables in gpu-vmss.bicep."""
    found: dict[str, str] = {}
    for var in pool.tree["variables"].values():
        call = var["value"].get("function", {}) if isinstance(var["value"], dict) else {}
        if call.get("type") == "replace":
            params = call["parameters"]
            value = pool.evaluate(params["new_string"])
            found[params["old_string"]] = (
                AZURE_VALUES[value.expression] if isinstance(value, Opaque) else value
            )
    return found


def render(pool: Template) -> str:
    """The user-data Azure would pass to the VMs (before base64)."""
    text = TEMPLATE.read_text()
    for placeholder, value in substitutions(pool).items():
        text = text.replace(placeholder, value)
    return text


def write_file(cloud_init: dict[str, Any], path: str) -> str:
    """The content of one write_files entry."""
    [entry] = [f for f in cloud_init["write_files"] if f["path"] == path]
    content: str = entry["content"]
    return content


def vmss_body(**overrides: Any) -> dict[str, Any]:
    """The scale set resource's body, evaluated with SAMPLE_PARAMS (and ``overrides``)."""
    pool = gpu_pool(**overrides)
    [vmss] = pool.resources_of_type("Microsoft.Compute/virtualMachineScaleSets").values()
    body: dict[str, Any] = pool.evaluate(Template.body(vmss))
    return body


def env_file(cloud_init: dict[str, Any]) -> dict[str, str]:
    """/etc/dagq/worker.env as a dict."""
    content = write_file(cloud_init, "/etc/dagq/worker.env")
    pairs = [line.split("=", 1) for line in content.splitlines() if line and line[0] != "#"]
    return {key: value.strip('"') for key, value in pairs}


def main(out_dir: str) -> None:
    """Write the rendered user-data for the offline checks (Makefile: infra-check)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for driver in (True, False):
        name = f"user-data-driver-{str(driver).lower()}.yaml"
        (out / name).write_text(render(gpu_pool(installNvidiaDriver=driver)))


if __name__ == "__main__":
    main(sys.argv[1])
