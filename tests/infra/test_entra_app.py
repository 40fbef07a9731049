"""The API's app registration exposes a delegated scope (``user_impersonation``) and pre-authorizes
the Azure CLI, so `az login` users get a token without consent (else AADSTS65001), and the CLI asks
for exactly that scope (the deployment's DAGQ_API_SCOPE output).

infra/entra/expose-api.sh makes those changes with ``az rest`` (Microsoft Graph); here it runs with
a stub ``az`` on PATH that records each call, so the request bodies are checked offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.infra.bicep_model import INFRA, MODULES, Template

AZURE_CLI = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"
"""Azure CLI's well-known application (client) id."""
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SCRIPT = INFRA / "entra" / "expose-api.sh"

_STUB = """#!{python}
import json, os, sys
OBJECT_ID = "99999999-0000-0000-0000-000000000000"
with open(os.environ["AZ_CALLS"], "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if args[:3] == ["ad", "app", "show"]:
    query = args[args.index("--query") + 1]
    print(OBJECT_ID if query == "id" else os.environ.get("AZ_SCOPE_ID", ""))
"""


def _run(tmp_path: Path, existing_scope: str = "") -> list[list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "az"
    stub.write_text(_STUB.format(python=sys.executable))
    stub.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "AZ_CALLS": str(calls),
        "AZ_SCOPE_ID": existing_scope,
    }
    subprocess.run(["sh", str(SCRIPT), CLIENT_ID], check=True, env=env, capture_output=True)
    return [json.loads(line) for line in calls.read_text().splitlines()]


def _patches(calls: list[list[str]]) -> list[dict[str, Any]]:
    bodies = []
    for call in calls:
        if call[:1] == ["rest"]:
            assert call[call.index("--method") + 1] == "PATCH"
            uri = call[call.index("--uri") + 1]
            assert (
                uri
                == "https://graph.microsoft.com/v1.0/applications/99999999-0000-0000-0000-000000000000"
            )
            bodies.append(json.loads(call[call.index("--body") + 1]))
    return bodies


def test_the_app_exposes_user_impersonation_and_preauthorizes_the_azure_cli(
    tmp_path: Path,
) -> None:
    scope_patch, preauthorize_patch = _patches(_run(tmp_path))
    api = scope_patch["api"]
    assert api["requestedAccessTokenVersion"] == 2
    [scope] = api["oauth2PermissionScopes"]
    assert scope["value"] == "user_impersonation"
    assert scope["type"] == "User"
    assert scope["isEnabled"] is True
    # The pre-authorization names the scope by its id (a second PATCH: the scope must exist first).
    [client] = preauthorize_patch["api"]["preAuthorizedApplications"]
    assert client == {"appId": AZURE_CLI, "delegatedPermissionIds": [scope["id"]]}


def test_running_it_again_keeps_the_scope_id(tmp_path: Path) -> None:
    existing = "abcdefab-0000-4000-8000-000000000001"
    scope_patch, preauthorize_patch = _patches(_run(tmp_path, existing_scope=existing))
    assert scope_patch["api"]["oauth2PermissionScopes"][0]["id"] == existing
    assert preauthorize_patch["api"]["preAuthorizedApplications"][0]["delegatedPermissionIds"] == [
        existing
    ]


def test_the_deployment_tells_the_cli_to_ask_for_user_impersonation() -> None:
    app = Template(MODULES / "functionapp.bicep", {"apiAuthClientId": CLIENT_ID})
    assert app.evaluate(app.outputs["apiScope"]["value"]) == f"api://{CLIENT_ID}/user_impersonation"
