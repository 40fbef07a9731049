"""The storage account is locked down, and every container, table and queue the Bicep creates has
exactly the name shared.names.ResourceNames computes for the deployment's prefix."""

from __future__ import annotations

from typing import Any

from shared.names import ResourceNames
from shared.settings import Settings
from tests.infra.bicep_model import INFRA, Opaque, Template, deployment

CONTAINERS = "Microsoft.Storage/storageAccounts/blobServices/containers"
TABLES = "Microsoft.Storage/storageAccounts/tableServices/tables"
QUEUES = "Microsoft.Storage/storageAccounts/queueServices/queues"


def _storage() -> Template:
    return deployment()[1]["storage"]


def _names(template: Template, azure_type: str) -> list[Any]:
    return [
        name
        for res in template.resources_of_type(azure_type).values()
        for name in template.names_of(res)
    ]


def test_account_security_settings() -> None:
    storage = _storage()
    [account] = storage.resources_of_type("Microsoft.Storage/storageAccounts").values()
    body = storage.evaluate(Template.body(account))
    assert body["kind"] == "StorageV2"
    props = body["properties"]
    assert props["minimumTlsVersion"] == "TLS1_2"
    assert props["supportsHttpsTrafficOnly"] is True
    assert props["allowBlobPublicAccess"] is False
    assert props["allowSharedKeyAccess"] is False  # main's default, passed to the module
    assert props["defaultToOAuthAuthentication"] is True
    assert props["allowCrossTenantReplication"] is False


def test_shared_key_access_is_a_parameter_that_defaults_to_off() -> None:
    main, _ = deployment()
    assert main.default("allowSharedKeyAccess") is False
    assert Template.body(main.modules["storage"])["params"]["allowSharedKeyAccess"] == (
        "allowSharedKeyAccess"
    )


def test_no_container_is_public() -> None:
    storage = _storage()
    for name, res in storage.resources_of_type(CONTAINERS).items():
        assert Template.body(res)["properties"]["publicAccess"] == "None", name


def test_names_equal_what_the_code_computes_for_the_default_prefix() -> None:
    main, modules = deployment()
    prefix = main.default("prefix")
    assert prefix == Settings.model_fields["prefix"].default
    names = ResourceNames(prefix)
    storage = modules["storage"]
    deployment_container = main.env["names"]["deploymentContainer"]

    # Plus the Functions host's own containers, created up front so roles can be scoped to them.
    host_containers = ["azure-webjobs-hosts", "azure-webjobs-secrets"]
    assert sorted(_names(storage, CONTAINERS)) == sorted(
        [*names.all_containers(), deployment_container, *host_containers]
    )
    assert _names(storage, TABLES) == [
        names.index_table,
        names.registry_table,
        names.schedules_table,
    ]
    task_queues = [names.task_queue(queue) for queue in main.default("taskQueues")]
    assert sorted(_names(storage, QUEUES)) == sorted(
        [
            names.event_queue,
            names.event_poison_queue,
            names.notify_queue,
            names.notify_poison_queue,
            *task_queues,
        ]
    )


def test_names_follow_another_prefix_too() -> None:
    # The interpolations are evaluated, not compared as text: a different prefix and a queue
    # name with '_' and capitals give the names ResourceNames gives.
    _, modules = deployment()
    storage = Template(modules["storage"].path, {"prefix": "acme2", "taskQueues": ["A100_80GB"]})
    names = ResourceNames("acme2")
    assert names.task_queue("A100_80GB") in _names(storage, QUEUES)
    assert names.index_table in _names(storage, TABLES)
    assert set(names.all_containers()) <= set(_names(storage, CONTAINERS))


def test_outputs_carry_the_names_other_modules_use() -> None:
    main, modules = deployment()
    names = ResourceNames(main.default("prefix"))
    outputs = main.env["storage"]["outputs"]
    assert outputs["eventQueueName"] == names.event_queue
    assert outputs["workflowsContainerName"] == names.workflows_container
    assert outputs["outputsContainerName"] == names.outputs_container
    assert outputs["deadletterContainerName"] == names.deadletter_container
    assert modules["storage"].default("prefix") == main.default("prefix")


def test_network_access_is_public_by_default_and_can_be_locked_down() -> None:
    storage = _storage()
    account = storage.evaluate(Template.body(storage.resources["storage"]))["properties"]
    assert account["publicNetworkAccess"] == "Enabled"
    assert account["networkAcls"]["defaultAction"] == "Allow"
    locked = Template(
        storage.path,
        {**storage.env, "networkDefaultAction": "Deny", "publicNetworkAccess": "Disabled",
         "allowedIpRanges": ["203.0.113.7"], "allowedSubnetIds": ["/subscriptions/s/subnet"]},
    )  # fmt: skip
    acls = locked.evaluate(Template.body(locked.resources["storage"]))["properties"]
    assert acls["publicNetworkAccess"] == "Disabled"
    assert acls["networkAcls"]["defaultAction"] == "Deny"
    assert acls["networkAcls"]["ipRules"] == [{"value": "203.0.113.7", "action": "Allow"}]
    assert acls["networkAcls"]["virtualNetworkRules"] == [
        {"id": "/subscriptions/s/subnet", "action": "Allow"}
    ]
    assert acls["allowSharedKeyAccess"] is False


def test_private_endpoints_cover_blob_queue_and_table() -> None:
    main, _ = deployment()
    module = main.modules["storagePrivateEndpoints"]
    assert main.evaluate(Template.condition(module)) is False  # off by default
    endpoints = Template(INFRA / "modules/storage-private-endpoints.bicep")
    assert endpoints.env["services"] == ["blob", "queue", "table"]


def test_every_storage_service_logs_to_log_analytics() -> None:
    storage = _storage()
    diagnostics = storage.resources_of_type("Microsoft.Insights/diagnosticSettings")
    scopes = {Template.body(res)["scope"] for res in diagnostics.values()}
    assert scopes == {"storage", "blobService", "queueService", "tableService"}
    for name, res in diagnostics.items():
        body = storage.evaluate(Template.body(res))
        assert isinstance(body["properties"]["workspaceId"], Opaque), name
        logs = {log["category"] for log in body["properties"].get("logs", [])}
        if Template.body(res)["scope"] != "storage":
            # Writes and deletes only: every idle poll would be a billed StorageRead row.
            assert logs == {"StorageWrite", "StorageDelete"}, name
    main, modules = deployment()
    assert "logAnalyticsWorkspaceId" in Template.body(main.modules["storage"])["params"]
    workspace = modules["monitoring"].resources_of_type("Microsoft.OperationalInsights/workspaces")
    [body] = [modules["monitoring"].evaluate(Template.body(w)) for w in workspace.values()]
    assert 0 < body["properties"]["workspaceCapping"]["dailyQuotaGb"] <= 5  # a daily cap


def test_deleted_blobs_and_containers_can_be_restored() -> None:
    storage = _storage()
    [blob] = storage.resources_of_type("Microsoft.Storage/storageAccounts/blobServices").values()
    properties = storage.evaluate(Template.body(blob))["properties"]
    for policy in ("deleteRetentionPolicy", "containerDeleteRetentionPolicy"):
        assert properties[policy]["enabled"] is True
        assert properties[policy]["days"] >= 7


def test_every_partition_gets_the_queues_the_code_names() -> None:
    main, modules = deployment()
    assert main.default("partitions") == Settings.model_fields["partitions"].default
    assert Template.body(main.modules["storage"])["params"]["partitions"] == "partitions"
    assert Template.body(main.modules["functionApp"])["params"]["partitions"] == "partitions"
    storage = Template(modules["storage"].path, {"prefix": "acme2", "partitions": 4})
    names = ResourceNames("acme2")
    queues = set(_names(storage, QUEUES))
    for partition in range(4):
        assert names.partition_event_queue(partition) in queues
        assert names.partition_poison_queue(partition) in queues
    assert names.partition_event_queue(4) not in queues


NETWORKS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks"
APP_SUBNET = f"{NETWORKS}/v/subnets/app"
GPU_SUBNET = f"{NETWORKS}/gpu/subnets/workers"


def _network_problem(**params: Any) -> Any:
    return Template(INFRA / "main.bicep", params).env["storageNetworkProblem"]


def test_a_closed_storage_account_the_app_or_the_pool_cannot_reach_is_refused() -> None:
    assert _network_problem() == ""  # the quick start: public network
    deny = {"storageNetworkDefaultAction": "Deny"}
    private = {"storagePublicNetworkAccess": "Disabled", "storagePrivateEndpointSubnetId": "PE"}
    # The Function App reaches a closed account only from its VNet.
    assert "needs appSubnetId" in _network_problem(**deny)
    assert "needs appSubnetId" in _network_problem(**private)
    assert _network_problem(**deny, appSubnetId=APP_SUBNET) == ""
    assert _network_problem(**deny, appSubnetId=APP_SUBNET, deployGpuPool=True) == ""
    assert _network_problem(**private, appSubnetId=APP_SUBNET) == ""
    no_endpoint = {**private, "storagePrivateEndpointSubnetId": ""}
    assert "needs storagePrivateEndpointSubnetId" in _network_problem(
        **no_endpoint, appSubnetId=APP_SUBNET
    )
    # The pool's own VNet has no route to private endpoints.
    refused = _network_problem(**private, appSubnetId=APP_SUBNET, deployGpuPool=True)
    assert "deployGpuPool" in refused
    assert "private endpoints" in refused
    # The problem stops the deployment (fail()) in a value the storage module needs.
    main = Template(INFRA / "main.bicep")
    params = Template.body(main.modules["storage"])["params"]
    conditional = params["networkDefaultAction"]["operator"]
    assert conditional["type"] == "conditional"
    assert conditional["operands"]["false_value"]["function"]["type"] == "fail"


def test_with_deny_the_app_subnet_and_the_pool_subnet_are_allowed() -> None:
    def allowed(**params: Any) -> Any:
        main = Template(INFRA / "main.bicep", params)
        assert Template.body(main.modules["storage"])["params"]["allowedSubnetIds"] == (
            "storageSubnetRules"
        )
        rules = main.tree["variables"]["storageSubnetRules"]["value"]
        return main.evaluate(rules, {"gpuNetwork": {"outputs": {"subnetId": GPU_SUBNET}}})

    assert allowed() == []
    # Allow: no rule (a VNet rule needs the subnet's Microsoft.Storage service endpoint).
    assert allowed(appSubnetId=APP_SUBNET, deployGpuPool=True) == []
    assert allowed(storageNetworkDefaultAction="Deny", appSubnetId=APP_SUBNET) == [APP_SUBNET]
    assert allowed(
        storageNetworkDefaultAction="Deny", appSubnetId=APP_SUBNET, deployGpuPool=True,
        storageAllowedSubnetIds=["/aks"],
    ) == ["/aks", APP_SUBNET, GPU_SUBNET]  # fmt: skip
    # The pool's network exists before the storage account, so its subnet can be allowed at once;
    # the scale set uses that subnet.
    main = Template(INFRA / "main.bicep")
    modules = list(main.modules)
    assert modules.index("gpuNetwork") < modules.index("storage")
    assert Template.condition(main.modules["gpuNetwork"]) == "deployGpuPool"
    pool_params = Template.body(main.modules["gpuPool"])["params"]
    assert main.evaluate(
        pool_params["subnetId"], {"gpuNetwork": {"outputs": {"subnetId": "S"}}}
    ) == ("S")
