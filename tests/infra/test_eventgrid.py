"""The optional Event Grid topic of notifications (issue 29): created only with
``eventGridTopic=true``, CloudEvents 1.0 in, Entra ID only (no access keys), the app identity the
only sender (EventGrid Data Sender on the topic alone), and its endpoint handed to the app as
``DAGQ_EVENTGRID_ENDPOINT`` (empty without a topic). No test contacts Event Grid."""

from __future__ import annotations

from typing import Any

from shared.settings import Settings
from tests.infra.bicep_model import INFRA, Opaque, Template, deployment

EVENTGRID_DATA_SENDER = "d5a91429-5739-47e2-a06b-3470a27159e7"


def _module() -> Template:
    main, _ = deployment()
    body = Template.body(main.modules["eventGrid"])
    params = {name: main.evaluate(value) for name, value in body["params"].items()}
    return Template(INFRA / "modules/eventgrid.bicep", params)


def _app_settings() -> dict[str, Any]:
    app = deployment()[1]["functionApp"]
    site = app.evaluate(Template.body(app.resources["functionApp"]))
    return {e["name"]: e["value"] for e in site["properties"]["siteConfig"]["appSettings"]}


def test_the_topic_is_optional_and_off_by_default() -> None:
    main, _ = deployment()
    assert main.default("eventGridTopic") is False
    assert Template.condition(main.modules["eventGrid"]) == "eventGridTopic"
    assert _app_settings()["DAGQ_EVENTGRID_ENDPOINT"] == ""  # off: the app sends nothing there


def test_the_endpoint_reaches_the_app_when_the_topic_exists() -> None:
    main, _ = deployment()
    with_topic = Template(INFRA / "main.bicep", {"eventGridTopic": True})
    app = Template.body(with_topic.modules["functionApp"])["params"]["eventGridEndpoint"]
    conditional = app["operator"]
    assert conditional["type"] == "conditional"
    assert with_topic.evaluate(conditional["operands"]["condition"]) is True
    assert ("DAGQ_EVENTGRID_ENDPOINT",) in Settings.env_names().values()
    assert main.outputs["DAGQ_EVENTGRID_ENDPOINT"]


def test_cloudevents_in_entra_only() -> None:
    template = _module()
    [topic] = template.resources_of_type("Microsoft.EventGrid/topics").values()
    props = template.evaluate(Template.body(topic))["properties"]
    assert props["inputSchema"] == "CloudEventSchemaV1_0"
    assert props["disableLocalAuth"] is True
    assert props["minimumTlsVersionAllowed"] == "1.2"


def test_only_the_app_may_send() -> None:
    template = _module()
    assignments = template.resources_of_type("Microsoft.Authorization/roleAssignments")
    assert list(assignments) == ["appSender"]
    body = Template.body(assignments["appSender"])
    assert body["scope"] == "topic"  # the topic alone, not the resource group
    props = template.evaluate(body)["properties"]
    assert props["principalType"] == "ServicePrincipal"
    assert isinstance(props["principalId"], Opaque | str)
    assert EVENTGRID_DATA_SENDER in str(template.evaluate(body["properties"]["roleDefinitionId"]))
