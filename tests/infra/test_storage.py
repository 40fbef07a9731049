"""The storage account is locked down, and every container, table and queue the Bicep creates has
exactly the name shared.names.ResourceNames computes for the deployment's prefix."""

from __future__ import annotations

from typing import Any

from shared.names import ResourceNames
from shared.settings import Settings
from tests.infra.bicep_model import Template, deployment

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

    assert sorted(_names(storage, CONTAINERS)) == sorted(
        [*names.all_containers(), deployment_container]
    )
    assert _names(storage, TABLES) == [names.index_table]
    task_queues = [names.task_queue(queue) for queue in main.default("taskQueues")]
    assert sorted(_names(storage, QUEUES)) == sorted(
        [names.event_queue, names.event_poison_queue, *task_queues]
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
