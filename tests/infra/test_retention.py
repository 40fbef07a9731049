"""The retention module: one lifecycle policy that deletes old outputs and dead letters of this
deployment's prefix only, after days given as parameters that main.bicep passes on."""

from __future__ import annotations

from shared.names import ResourceNames
from tests.infra.bicep_model import Template, deployment

POLICIES = "Microsoft.Storage/storageAccounts/managementPolicies"


def _rules(template: Template) -> dict[str, dict[str, object]]:
    [policy] = template.resources_of_type(POLICIES).values()
    body = template.evaluate(Template.body(policy))
    assert body["name"] == "default"  # an account has exactly one policy, named so
    return {rule["name"]: rule for rule in body["properties"]["policy"]["rules"]}


def test_main_wires_the_retention_days_into_the_module() -> None:
    main, modules = deployment()
    params = Template.body(main.modules["retention"])["params"]
    assert params["outputsRetentionDays"] == "outputsRetentionDays"
    assert params["deadletterRetentionDays"] == "deadletterRetentionDays"
    assert params["prefix"] == "prefix"
    assert main.default("outputsRetentionDays") == 90
    assert main.default("deadletterRetentionDays") == 30
    assert modules["retention"].env["outputsRetentionDays"] == 90


def test_rules_delete_outputs_dead_letters_and_cache_entries_of_the_prefix_only() -> None:
    _, modules = deployment()
    names = ResourceNames("dagq")
    rules = _rules(modules["retention"])
    assert set(rules) == {"dagq-outputs", "dagq-deadletters", "dagq-cache"}
    expected = {
        "dagq-outputs": (names.outputs_container, 90),
        "dagq-deadletters": (names.deadletter_container, 30),
        "dagq-cache": (names.cache_container, 366),  # past the longest ttl (365 days)
    }
    for name, (container, days) in expected.items():
        rule = rules[name]
        assert rule["enabled"] is True
        definition = rule["definition"]
        assert definition["filters"]["prefixMatch"] == [f"{container}/"]  # type: ignore[index]
        delete = definition["actions"]["baseBlob"]["delete"]  # type: ignore[index]
        assert delete == {"daysAfterModificationGreaterThan": days}


def test_another_prefix_and_other_days() -> None:
    _, modules = deployment()
    template = Template(
        modules["retention"].path,
        {"storageAccountName": "st1", "prefix": "acme2", "outputsRetentionDays": 7,
         "deadletterRetentionDays": 3},
    )  # fmt: skip
    rules = _rules(template)
    names = ResourceNames("acme2")
    outputs = rules["dagq-outputs"]["definition"]
    assert outputs["filters"]["prefixMatch"] == [f"{names.outputs_container}/"]  # type: ignore[index]
    assert outputs["actions"]["baseBlob"]["delete"]["daysAfterModificationGreaterThan"] == 7  # type: ignore[index]
    # Definitions, states and the index are never the policy's: purge deletes them.
    for rule in rules.values():
        for prefix in rule["definition"]["filters"]["prefixMatch"]:  # type: ignore[index]
            assert not prefix.startswith(names.workflows_container)
