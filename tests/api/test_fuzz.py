"""The HTTP API fuzzed from its own OpenAPI document (schemathesis) against the local host.

For every documented operation, schemathesis generates requests — valid ones from the schemas,
and invalid ones (wrong types, out-of-range values, odd strings) — and the answers must hold:
no 5xx, every error is problem+json, every answer has a documented status, media type and schema.
The number of examples is bounded so the whole module stays well under a minute; every failure
schemathesis finds is shrunk to a minimal request and printed with a curl line to reproduce it.
"""

from __future__ import annotations

import json

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from devtools.testing.api_host import HostProcess
from shared.api.openapi import OPENAPI_PATH

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

EXAMPLES = 30
"""Generated requests per operation and phase (the bound that keeps the module fast)."""

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

# Methods a path does not declare are answered by the platform, not by the app (Azure: an empty
# 404; the local host: an empty 405 with Allow), so the fuzzing sticks to the documented ones.
CONFIG = SchemathesisConfig.from_dict({"phases": {"coverage": {"unexpected-methods": []}}})

schema = schemathesis.openapi.from_path(OPENAPI_PATH, config=CONFIG)

EXAMPLE_ID = "20261201-101500-ab12cd"
"""The document's example workflow id (and ``train`` its example task): the fuzzing submits it
first, so the examples reach a real workflow and its answers are checked too, not only 404s."""

SEED = """
name: fuzz-seed
tasks:
  - {name: prep, kwargs: {cmd: "true"}}
  - {name: train, kwargs: {cmd: "true"}, depends_on: [prep]}
"""


@pytest.fixture(scope="module", autouse=True)
def seeded(api_only_host: HostProcess) -> None:
    examples = {
        parameter.get("example")
        for operations in json.loads(OPENAPI_PATH.read_text())["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path" and parameter["name"] in ("id", "task")
    }
    assert examples == {EXAMPLE_ID, "train"}
    response = httpx.post(
        f"{api_only_host.url}/workflows",
        params={"id": EXAMPLE_ID},
        content=SEED,
        headers={"Content-Type": "application/yaml"},
        timeout=30,
    )
    assert response.status_code in (200, 201), response.text


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_as_documented(case: schemathesis.Case, api_only_host: HostProcess) -> None:
    response = case.call(base_url=api_only_host.url, timeout=30)
    case.validate_response(response, checks=CHECKS)
    if response.status_code >= 400:
        media_type = response.headers.get("content-type", [""])[0].split(";")[0]
        assert media_type == "application/problem+json", (response.status_code, response.text[:300])
