"""Alerts: a log query per thing that needs a person (failed functions, dead letters, poison
queues, work waiting with no worker, workers lost, workers crash-looping), each over the names the
code uses, each sent to the action groups the deployment names."""

from __future__ import annotations

import re
from typing import Any

from shared.names import WORKER_PARTITION, ResourceNames
from tests.infra.bicep_model import MODULES, Template, deployment

PREFIX = "acme"


def _alerts(**params: Any) -> Template:
    return Template(
        MODULES / "alerts.bicep",
        {"location": "swedencentral", "logAnalyticsWorkspaceId": "WS", "prefix": PREFIX, **params},
    )


def _rules(template: Template) -> dict[str, dict[str, Any]]:
    rules: list[dict[str, Any]] = template.env["rules"]
    return {rule["name"]: rule for rule in rules}


def test_every_condition_that_needs_a_person_has_an_alert() -> None:
    assert set(_rules(_alerts())) == {
        "function-failures",
        "dead-letters",
        "poison-queues",
        "work-waiting",
        "workers-lost",
        "workers-crash-looping",
        "tolerated-storage-failures",
    }


def test_queries_use_the_names_the_code_uses() -> None:
    names = ResourceNames(PREFIX)
    rules = _rules(_alerts())
    assert f'"/{names.deadletter_container}/"' in rules["dead-letters"]["query"]
    assert names.event_poison_queue.endswith("-poison")
    assert '"-poison/messages"' in rules["poison-queues"]["query"]
    # The work-waiting query's pattern matches every task queue name shared/names.py makes.
    pattern = re.search(r'extract\(@"(.*?)"', rules["work-waiting"]["query"])
    assert pattern is not None
    for queue in ("gpu", "A100_80GB", "cpu-large"):
        url = f"https://st.queue.core.windows.net/{names.task_queue(queue)}/messages"
        found = re.search(pattern.group(1), url)
        assert found is not None
        assert found.group(1) == names.task_queue(queue)
    assert f"{WORKER_PARTITION}(%27|')" in rules["workers-lost"]["query"]
    assert f'"/{names.registry_table}("' in rules["workers-lost"]["query"]
    # A bad definition (4xx) is the caller's problem, not an alert.
    assert ">= 500" in rules["function-failures"]["query"]
    # The crash-loop alert counts the line the agent logs at each start.
    assert '"worker started"' in rules["workers-crash-looping"]["query"]
    # The tolerated-failures alert matches the line shared/storage/tolerated.py logs.
    assert '"tolerated storage failure"' in rules["tolerated-storage-failures"]["query"]


def test_work_waiting_allows_for_a_gpu_vm_to_boot() -> None:
    template = _alerts()
    assert template.default("workWaitingMinutes") >= 15
    assert template.decorator("workWaitingMinutes", "min_value") == 15


def test_alerts_go_to_the_email_and_the_action_group_given() -> None:
    assert _alerts().env["actionGroups"] == []
    group = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Insights/actionGroups/oncall"
    assert _alerts(actionGroupId=group).env["actionGroups"] == [group]
    with_email = _alerts(alertEmail="ops@example.com").env["actionGroups"]
    assert len(with_email) == 1  # the email group's id (only Azure knows it)
    template = _alerts()
    [resource] = template.resources_of_type("Microsoft.Insights/scheduledQueryRules").values()
    body = Template.body(resource)
    assert body["properties"]["actions"]["actionGroups"] == "actionGroups"


def test_main_deploys_the_alerts_on_the_workspace() -> None:
    main, modules = deployment()
    params = Template.body(main.modules["alerts"])["params"]
    assert params["alertEmail"] == "alertEmail"
    assert params["actionGroupId"] == "alertActionGroupId"
    assert main.default("alertEmail") == ""
    assert "alerts" in modules


def test_rules_skip_query_validation_on_a_new_workspace() -> None:
    # On a first deployment the workspace's tables (AppRequests, StorageBlobLogs...) have no rows
    # yet, so ARM's query validation fails and so does `azd up`: skipQueryValidation.
    template = _alerts()
    [resource] = template.resources_of_type("Microsoft.Insights/scheduledQueryRules").values()
    properties = template.evaluate(
        Template.body(resource)["properties"], {"rule": _rules(template)["dead-letters"]}
    )
    assert properties["skipQueryValidation"] is True
