"""The permission model is infra/'s (model.json is what the templates say), and the permission
check fails, naming the resource, when a role assignment the code needs is removed from
identity.bicep: shown for three different removals, against the calls docs/permissions.md lists
(the calls the end-to-end scenarios made: tests/cli/test_rbac_scenarios.py)."""

from __future__ import annotations

import pytest

from devtools.permissions import DOC
from shared.storage.rbac.model import MODEL_FILE, PermissionModel
from shared.storage.rbac.report import parse_rows, refused_under, unused, uses_of
from tests.infra.permission_model import deployed, render, without_assignment


def test_the_checked_in_model_is_infras() -> None:
    assert MODEL_FILE.read_text() == render(deployed()), (
        "infra/ changed: python -m tests.infra.permission_model --write"
    )


def documented_calls() -> list:  # type: ignore[type-arg]
    return uses_of(parse_rows(DOC.read_text()))


def test_infra_grants_every_documented_call_and_nothing_unused() -> None:
    model = deployed()
    uses = documented_calls()
    assert len(uses) > 40
    assert refused_under(model, uses) == []
    assert unused(model, uses) == []


@pytest.mark.parametrize(
    ("removed", "resource"),
    [
        ("appCacheContributor", "container {prefix}-cache"),
        ("workerOutputsContributor", "container {prefix}-outputs"),
        ("workerRegistryTableContributor", "table {prefix}WorkersRegistry"),
        ("workerStateReader", "container {prefix}-workflows"),
    ],
)
def test_removing_a_role_the_code_needs_fails_naming_the_resource(
    removed: str, resource: str
) -> None:
    model: PermissionModel = without_assignment(removed)
    assert removed not in {g.resource for g in model.grants}
    refused = refused_under(model, documented_calls())
    assert refused, f"nothing refused without {removed}"
    assert all(resource in line for line in refused), refused


def test_an_unused_role_fails_least_privilege() -> None:
    # Every call that needed the app's dead-letter role, forgotten: the role is then unused.
    uses = [u for u in documented_calls() if "appDeadletterContributor" not in u.grants]
    assert [g.resource for g in unused(deployed(), uses)] == ["appDeadletterContributor"]
