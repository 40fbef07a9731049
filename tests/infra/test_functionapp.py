"""The Function App runs on Flex Consumption with Python 3.11, reaches storage by managed identity,
and gets exactly the app settings dagq's code and the Functions host read."""

from __future__ import annotations

import re
from typing import Any

from shared.names import ResourceNames
from shared.settings import Settings
from tests.infra.bicep_model import REPO, Opaque, Template, deployment

# Read by the Functions host, not by Settings: DAGQ_STORAGE__credential makes the connection
# DAGQ_STORAGE identity-based for the queue trigger; DAGQ_EVENT_QUEUE names the event queue for
# tools and for a trigger that binds %DAGQ_EVENT_QUEUE%.
HOST_SETTINGS = {"DAGQ_STORAGE__credential", "DAGQ_EVENT_QUEUE"}


def _app() -> tuple[Template, dict[str, Any]]:
    app = deployment()[1]["functionApp"]
    return app, app.evaluate(Template.body(app.resources["functionApp"]))


def _settings() -> dict[str, Any]:
    _, site = _app()
    entries = site["properties"]["siteConfig"]["appSettings"]
    names = [entry["name"] for entry in entries]
    assert len(names) == len(set(names)), "an app setting is set twice"
    return {entry["name"]: entry["value"] for entry in entries}


def _settings_aliases() -> set[str]:
    """Every environment variable ``Settings`` reads (its prefix's names and the aliases)."""
    return {name for names in Settings.env_names().values() for name in names}


def test_plan_is_flex_consumption_on_linux() -> None:
    app, _ = _app()
    [plan] = app.resources_of_type("Microsoft.Web/serverfarms").values()
    body = app.evaluate(Template.body(plan))
    assert body["sku"] == {"tier": "FlexConsumption", "name": "FC1"}
    assert body["properties"]["reserved"] is True  # Linux


def test_site_runs_python_311_with_an_instance_limit_every_region_accepts() -> None:
    app, site = _app()
    assert site["kind"] == "functionapp,linux"
    config = site["properties"]["functionAppConfig"]
    assert config["runtime"] == {"name": "python", "version": "3.11"}
    scale = config["scaleAndConcurrency"]
    # Microsoft: "Currently the lowest maximum instance count value is 40" (Event-driven scaling,
    # Limit scale-out); a default below it fails the deployment in those regions.
    assert scale["maximumInstanceCount"] == 40
    main, _ = deployment()
    assert main.default("maximumInstanceCount") == 40
    assert scale["instanceMemoryMB"] in app.decorator("instanceMemoryMB", "allowed")


def test_site_is_https_only_with_a_user_assigned_identity() -> None:
    app, site = _app()
    assert site["properties"]["httpsOnly"] is True
    assert site["properties"]["siteConfig"]["minTlsVersion"] == "1.2"
    assert site["identity"]["type"] == "UserAssigned"
    identities = Template.body(app.resources["functionApp"])["identity"]["userAssignedIdentities"]
    assert list(identities) == ["'${appIdentityId}'"]
    deploy = site["properties"]["functionAppConfig"]["deployment"]["storage"]
    assert deploy["type"] == "blobContainer"
    assert deploy["authentication"]["type"] == "UserAssignedIdentity"


def test_host_storage_is_identity_based() -> None:
    settings = _settings()
    assert "AzureWebJobsStorage" not in settings  # no connection string, no key
    assert settings["AzureWebJobsStorage__credential"] == "managedidentity"
    assert {"AzureWebJobsStorage__accountName", "AzureWebJobsStorage__clientId"} <= set(settings)
    assert "APPLICATIONINSIGHTS_CONNECTION_STRING" in settings
    # Flex Consumption sets the runtime in functionAppConfig and rejects these settings.
    assert not {"FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION"} & set(settings)


def test_every_dagq_setting_is_one_the_code_reads() -> None:
    function_app = REPO / "function_app.py"
    source = function_app.read_text() if function_app.exists() else ""
    read_by_app = set(re.findall(r"DAGQ_[A-Z_]+", source))
    known = _settings_aliases() | read_by_app | HOST_SETTINGS
    dagq = {name for name in _settings() if name.startswith("DAGQ_")}
    assert dagq <= known, f"settings nothing reads: {sorted(dagq - known)}"


def test_required_dagq_settings_are_present_with_the_right_values() -> None:
    main, _ = deployment()
    settings = _settings()
    names = ResourceNames(main.default("prefix"))
    assert settings["DAGQ_STORAGE__credential"] == "managedidentity"
    for name in ("accountName", "clientId", "queueServiceUri", "blobServiceUri", "tableServiceUri"):
        assert isinstance(settings[f"DAGQ_STORAGE__{name}"], Opaque)  # filled in by Azure
    assert settings["DAGQ_PREFIX"] == names.prefix
    assert settings["DAGQ_EVENT_QUEUE"] == names.event_queue
    assert settings["DAGQ_PARTITIONS"] == str(Settings.model_fields["partitions"].default)
    assert settings["DAGQ_SWEEP_SCHEDULE"] == Settings.model_fields["sweep_schedule"].default
    # The same user-assigned identity for the host, dagq's clients and azure-identity.
    client_ids = {
        settings[key].expression
        for key in ("AzureWebJobsStorage__clientId", "DAGQ_STORAGE__clientId", "AZURE_CLIENT_ID")
    }
    assert client_ids == {"appIdentity.properties.clientId"}


def test_bindings_in_function_app_find_their_settings() -> None:
    function_app = REPO / "function_app.py"
    if not function_app.exists():
        return
    source = function_app.read_text()
    settings = _settings()
    for expression in re.findall(r"%([A-Za-z0-9_]+)%", source):
        assert expression in settings, f"%{expression}% has no app setting"
    for connection in re.findall(r"connection=\"([A-Za-z0-9_]+)\"", source):
        assert f"{connection}__queueServiceUri" in settings
        assert settings[f"{connection}__credential"] == "managedidentity"


def test_no_basic_publishing_credentials_and_no_ftp() -> None:
    app, site = _app()
    assert site["properties"]["siteConfig"]["ftpsState"] == "Disabled"
    policies = app.resources_of_type("Microsoft.Web/sites/basicPublishingCredentialsPolicies")
    bodies = [app.evaluate(Template.body(policy)) for policy in policies.values()]
    assert sorted(body["name"] for body in bodies) == ["ftp", "scm"]
    assert all(body["properties"]["allow"] is False for body in bodies)
    assert all(Template.condition(policy) is None for policy in policies.values())


def test_telemetry_is_sent_with_the_app_identity_and_no_connection_string_travels() -> None:
    settings = _settings()
    assert settings["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == Opaque(
        "ClientId=${appIdentityClientId};Authorization=AAD"
    )
    # Read from the component inside the module: never a parameter or an output.
    connection = settings["APPLICATIONINSIGHTS_CONNECTION_STRING"]
    assert connection.expression.startswith("applicationInsights.properties")
    main, modules = deployment()
    for template in (main, *modules.values()):
        assert not any("connection" in name.lower() for name in template.outputs)
        assert not any("connectionstring" in name.lower() for name in template.parameters)
    monitoring = modules["monitoring"]
    [component] = monitoring.resources_of_type("Microsoft.Insights/components").values()
    assert monitoring.evaluate(Template.body(component))["properties"]["DisableLocalAuth"] is True


def test_entra_id_in_front_of_the_api_signs_browsers_in_and_keeps_health_open() -> None:
    app, _ = _app()
    auth = app.resources["authSettings"]
    assert app.evaluate(Template.condition(auth)) is False  # off by default: function keys only
    on = Template(app.path, {**app.env, "apiAuthClientId": "11111111-2222-3333-4444-555555555555"})
    assert on.evaluate(Template.condition(on.resources["authSettings"])) is True
    body = on.evaluate(Template.body(on.resources["authSettings"]))
    validation = body["properties"]["globalValidation"]
    assert validation["requireAuthentication"] is True
    # A browser opening the dashboard is sent to sign in (a 401 left the page blank); the API's
    # schema and health hold no data and stay open; the dashboard's page is not excluded, so
    # opening it is what signs the user in for its data calls.
    assert validation["unauthenticatedClientAction"] == "RedirectToLoginPage"
    assert validation["redirectToProvider"] == "azureactivedirectory"
    assert validation["excludedPaths"] == ["/api/health", "/api/openapi.json"]
    assert not [path for path in validation["excludedPaths"] if path.startswith("/api/ui")]
    aad = body["properties"]["identityProviders"]["azureActiveDirectory"]
    assert aad["registration"]["clientId"] == "11111111-2222-3333-4444-555555555555"
    assert "api://11111111-2222-3333-4444-555555555555" in aad["validation"]["allowedAudiences"]
    assert on.evaluate(on.outputs["apiScope"]["value"]) == (
        "api://11111111-2222-3333-4444-555555555555/user_impersonation"
    )
    main, _ = deployment()
    assert main.default("apiAuthClientId") == ""
    assert "DAGQ_API_SCOPE" in main.outputs


def test_app_logs_go_to_log_analytics() -> None:
    app, _ = _app()
    [diagnostics] = app.resources_of_type("Microsoft.Insights/diagnosticSettings").values()
    body = app.evaluate(Template.body(diagnostics))
    assert Template.body(diagnostics)["scope"] == "functionApp"
    assert [log["category"] for log in body["properties"]["logs"]] == ["FunctionAppLogs"]


def test_the_app_knows_the_pool_vm_size_for_its_default_prices() -> None:
    from shared.cost.prices import VM_SIZES

    assert _settings()["DAGQ_GPU_VM_SKU"] == ""  # no pool by default
    main = Template(REPO / "infra" / "main.bicep", {"deployGpuPool": True})
    params = Template.body(main.modules["functionApp"])["params"]
    assert main.evaluate(params["gpuVmSku"]) == "Standard_NC4as_T4_v3"
    assert "DAGQ_GPU_VM_SKU" in _settings_aliases()
    assert main.default("gpuVmSku") in VM_SIZES
