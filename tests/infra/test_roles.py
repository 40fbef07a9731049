"""The role assignments in modules/identity.bicep are exactly the ones infra/README.md lists (the
doc and the code cannot drift), with the real built-in role ids."""

from __future__ import annotations

from typing import Any

import pytest

from shared.names import ResourceNames
from tests.infra.bicep_model import INFRA, Template, deployment, symbol

# Azure's built-in roles (their ids are the same in every tenant).
BUILTIN_ROLES = {
    "Storage Blob Data Owner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "Storage Queue Data Contributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
    "Storage Queue Data Reader": "19e7f393-937e-4f77-808e-94535e297925",
    "Storage Queue Data Message Processor": "8a0f0c08-91a1-4084-bc3d-661d67233fed",
    "Storage Queue Data Message Sender": "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a",
    "Storage Table Data Contributor": "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
    "Storage Table Data Reader": "76199698-9eea-4c19-bc75-cec21354c6b6",
    "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
}
ROLE_BY_ID = {role_id: name for name, role_id in BUILTIN_ROLES.items()}

# Who a principalId expression stands for.
PRINCIPALS = {"appIdentity": "app", "workerIdentity": "worker", "principalId": "user"}

Assignment = tuple[str, str, str]  # (identity, role, scope)


def readme_roles() -> list[Assignment]:
    """The rows of the table under '## Roles' in infra/README.md."""
    lines = (INFRA / "README.md").read_text().splitlines()
    start = lines.index("## Roles")
    rows: list[Assignment] = []
    in_table = False
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "Identity" or set(cells[0]) <= {"-", ":"}:
            continue
        rows.append((cells[0], cells[1], cells[2]))
    assert rows, "no roles table in infra/README.md"
    return rows


# Role assignments in a loop, by the looped resource they are scoped to: the README names the set.
LOOPED_SCOPES = {
    "taskQueues": "each task queue {prefix}-q-*",
    "eventQueues": "each event queue {prefix}-events*",
}


def _scope_name(identity: Template, scope: Any, prefix: str) -> str:
    """The README's name for a role assignment's scope expression."""
    if isinstance(scope, dict):  # taskQueues[i]: one assignment per item of a looped resource
        looped = scope["operator"]["operands"]["operand_1"]
        assert scope["operator"]["type"] == "index_accessor"
        return LOOPED_SCOPES[looped]
    kind = identity.resources[scope]["type"]
    if kind == "Microsoft.Storage/storageAccounts":
        return "storage account"
    if kind == "Microsoft.Insights/components":
        return "Application Insights"
    [name] = identity.names_of(identity.resources[scope])
    label = {"/containers": "container", "/tables": "table"}
    [word] = [w for suffix, w in label.items() if kind.endswith(suffix)]
    return f"{word} " + name.replace(prefix, "{prefix}", 1)


def bicep_roles() -> list[Assignment]:
    """(identity, role, scope) of every role assignment in identity.bicep, scopes named like the
    README: 'storage account', 'container <name with {prefix}>', 'table ...', 'each task queue ...',
    'Application Insights'."""
    main, modules = deployment()
    identity = modules["identity"]
    prefix = main.default("prefix")
    found: list[Assignment] = []
    for name, res in identity.resources_of_type("Microsoft.Authorization/roleAssignments").items():
        body = Template.body(res)
        role_id = str(identity.evaluate(body["properties"]["roleDefinitionId"])).rsplit("/", 1)[-1]
        assert role_id in ROLE_BY_ID, f"{name}: {role_id} is not a known built-in role"
        principal = PRINCIPALS[str(symbol(body["properties"]["principalId"]))]
        found.append((principal, ROLE_BY_ID[role_id], _scope_name(identity, body["scope"], prefix)))
    return found


def test_role_ids_in_the_template_are_the_builtin_ones() -> None:
    identity = deployment()[1]["identity"]
    for key, role_id in identity.env["roleIds"].items():
        name = next(n for n, i in BUILTIN_ROLES.items() if i == role_id)
        assert key == name.replace(" ", "")[0].lower() + name.replace(" ", "")[1:]


def test_assignments_equal_the_readme_table() -> None:
    readme, bicep = readme_roles(), bicep_roles()
    assert len(bicep) == len(set(bicep)), "a role is assigned twice"
    assert len(readme) == len(set(readme)), "a role is listed twice in the README"
    assert sorted(bicep) == sorted(readme)


def test_container_scopes_are_dagq_or_functions_host_containers() -> None:
    names = ResourceNames("dagq")
    host = {"azure-webjobs-hosts", "azure-webjobs-secrets", "app-package"}
    scopes = {scope for _, _, scope in bicep_roles() if scope.startswith("container ")}
    assert {s.replace("{prefix}", "dagq").split(" ", 1)[1] for s in scopes} <= (
        set(names.all_containers()) | host
    )


def test_looped_scopes_are_the_task_and_event_queues() -> None:
    main, modules = deployment()
    identity = modules["identity"]
    names = ResourceNames(main.default("prefix"))
    assert identity.names_of(identity.resources["taskQueues"]) == [
        names.task_queue(queue) for queue in main.default("taskQueues")
    ]
    assert identity.names_of(identity.resources["eventQueues"]) == [names.event_queue]


def test_no_identity_holds_a_blob_role_on_the_whole_account_except_the_optional_user() -> None:
    for who, role, scope in bicep_roles():
        if who != "user":
            # The app's queue role (the host's queues) and table role (the host's diagnostic
            # event tables, named by month) need the account; no blob role does.
            account_wide = {"Storage Queue Data Contributor", "Storage Table Data Contributor"}
            assert scope != "storage account" or (who == "app" and role in account_wide), (
                who,
                role,
            )
        if who == "worker":
            assert scope != "storage account"


def test_the_functions_host_may_write_its_diagnostic_event_tables() -> None:
    assert ("app", "Storage Table Data Contributor", "storage account") in bicep_roles()


def test_workers_read_only_state_blobs_in_the_workflows_container() -> None:
    identity = deployment()[1]["identity"]
    body = identity.evaluate(Template.body(identity.resources["workerStateReader"]))
    condition = body["properties"]["condition"]
    assert body["properties"]["conditionVersion"] == "2.0"
    assert "blobs/read" in condition
    assert "StringLike '*.state'" in condition
    assert ResourceNames.state_blob("wf-1").endswith(".state")
    assert not ResourceNames.definition_blob("wf-1").endswith(".state")


@pytest.mark.parametrize("who", ["app", "worker"])
def test_identities_are_service_principals(who: str) -> None:
    identity = deployment()[1]["identity"]
    for res in identity.resources_of_type("Microsoft.Authorization/roleAssignments").values():
        body: dict[str, Any] = Template.body(res)
        if PRINCIPALS[str(symbol(body["properties"]["principalId"]))] == who:
            assert body["properties"]["principalType"] == "ServicePrincipal"
            assert Template.condition(res) is None


def test_user_roles_only_when_a_principal_is_given() -> None:
    main, modules = deployment()
    identity = modules["identity"]
    user = [
        res
        for res in identity.resources_of_type("Microsoft.Authorization/roleAssignments").values()
        if symbol(Template.body(res)["properties"]["principalId"]) == "principalId"
    ]
    assert user
    for res in user:
        assert identity.evaluate(Template.condition(res)) is False  # principalId defaults to ''
        assert Template.body(res)["properties"]["principalType"] == "principalType"
    assert main.default("principalId") == ""


def test_workers_have_no_access_to_the_host_storage() -> None:
    # Function keys live in the host's containers: worker blob roles stop at dagq's containers.
    for who, role, scope in bicep_roles():
        if who == "worker" and role.startswith("Storage Blob"):
            assert scope.startswith("container {prefix}-")
        if who == "worker":
            assert "azure-webjobs" not in scope
            assert "app-package" not in scope


def test_workers_may_send_to_every_partition_event_queue() -> None:
    # Workers report to their task's partition (shared/names.py partition_event_queue): the
    # worker identity needs Message Sender on every one of them, which storage.bicep lists in
    # eventQueueNames. With more partitions the list must grow with them.
    main, modules = deployment()
    storage = modules["storage"]
    names = ResourceNames(main.default("prefix"))
    counts = [1, 3] if "partitions" in storage.parameters else [1]
    for count in counts:
        params = {**storage.env, "partitions": count} if count > 1 else storage.env
        evaluated = Template(storage.path, params)
        listed = evaluated.evaluate(evaluated.outputs["eventQueueNames"]["value"])
        assert listed == [names.partition_event_queue(p) for p in range(count)]
