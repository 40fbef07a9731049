"""Derive dagq's permission model from infra/ (the Bicep templates, evaluated offline) and keep
the checked-in copy, ``shared/storage/rbac/model.json``, equal to it.

    python -m tests.infra.permission_model            # exit 1 if model.json is out of date
    python -m tests.infra.permission_model --write    # regenerate it after changing infra/

Every role assignment of modules/identity.bicep becomes one grant: the identity (from its
principalId), the built-in role (from its role definition id), its scope named as infra/README.md
names it, and its ABAC condition. Grants that dagq's own storage calls do not use are marked with
who uses them instead (``OUTSIDE_DAGQ``): the Functions host's storage, telemetry, KEDA.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from shared.storage.rbac.model import MODEL_FILE, Grant, PermissionModel
from shared.storage.rbac.roles import ROLE_BY_ID
from tests.infra.bicep_model import Template, deployment, symbol

PRINCIPALS = {"appIdentity": "app", "workerIdentity": "worker", "principalId": "user"}
"""Who a role assignment's principalId expression stands for."""

LOOPED_SCOPES = {
    "taskQueues": "each task queue {prefix}-q-*",
    "eventQueues": "each event queue {prefix}-events*",
}
"""Role assignments in a loop, by the looped resource they are scoped to."""

HOST = "the Functions host (AzureWebJobsStorage: its keys, leases, deployment package)"
OUTSIDE_DAGQ = {
    "appHostsBlobDataOwner": HOST,
    "appSecretsBlobDataOwner": HOST,
    "appDeploymentBlobDataOwner": HOST,
    "appMetricsPublisher": "telemetry to Application Insights (Entra ID ingestion)",
    "workerMetricsPublisher": "telemetry to Application Insights (Entra ID ingestion)",
    "userBlobDataContributor": "the deploying user: any component run locally (optional)",
    "userQueueDataContributor": "the deploying user: any component run locally (optional)",
    "userTableDataContributor": "the deploying user: any component run locally (optional)",
}
"""Assignments no storage call of dagq's own code needs, and who needs them."""


def scope_name(identity: Template, scope: Any, prefix: str) -> str:
    """The README's name of a role assignment's scope expression."""
    if isinstance(scope, dict):  # taskQueues[i]: one assignment per item of a looped resource
        assert scope["operator"]["type"] == "index_accessor"
        return LOOPED_SCOPES[scope["operator"]["operands"]["operand_1"]]
    kind = identity.resources[scope]["type"]
    if kind == "Microsoft.Storage/storageAccounts":
        return "storage account"
    if kind == "Microsoft.Insights/components":
        return "Application Insights"
    [name] = identity.names_of(identity.resources[scope])
    label = {"/containers": "container", "/tables": "table", "/queues": "queue"}
    [word] = [w for suffix, w in label.items() if kind.endswith(suffix)]
    return f"{word} " + str(name).replace(prefix, "{prefix}", 1)


def derive(identity: Template, prefix: str) -> PermissionModel:
    """The permission model of one evaluated identity module."""
    grants = []
    for resource, declaration in identity.resources_of_type(
        "Microsoft.Authorization/roleAssignments"
    ).items():
        body = Template.body(declaration)
        properties = body["properties"]
        role_id = str(identity.evaluate(properties["roleDefinitionId"])).rsplit("/", 1)[-1]
        if role_id not in ROLE_BY_ID:
            raise ValueError(f"{resource}: role {role_id} is not one the model knows")
        condition = properties.get("condition")
        grants.append(
            Grant(
                identity=PRINCIPALS[str(symbol(properties["principalId"]))],
                role=ROLE_BY_ID[role_id].name,
                scope=scope_name(identity, body["scope"], prefix),
                resource=resource,
                condition=None if condition is None else str(identity.evaluate(condition)),
                used_by=OUTSIDE_DAGQ.get(resource),
            )
        )
    return PermissionModel(grants=tuple(grants))


def deployed() -> PermissionModel:
    """The model of infra/ as it is."""
    main, modules = deployment()
    return derive(modules["identity"], main.default("prefix"))


def without_assignment(resource: str) -> PermissionModel:
    """The model of infra/ with the role assignment ``resource`` deleted from identity.bicep's
    text (not from the model): what a deployment lacking it would enforce."""
    main, modules = deployment()
    identity = modules["identity"]
    text = identity.path.read_text()
    block = re.compile(rf"^resource {re.escape(resource)} .*?^\}}\n", re.MULTILINE | re.DOTALL)
    cut, count = block.subn("", text)
    assert count == 1, f"no resource {resource} in {identity.path}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / identity.path.name
        path.write_text(cut)
        params = {name: identity.env[name] for name in identity.parameters}
        return derive(Template(path, params), main.default("prefix"))


def render(model: PermissionModel) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the checked-in model")
    args = parser.parse_args(argv)
    text = render(deployed())
    if args.write:
        MODEL_FILE.write_text(text)
        return 0
    if MODEL_FILE.read_text() != text:
        print(f"{MODEL_FILE} is out of date: python -m tests.infra.permission_model --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
