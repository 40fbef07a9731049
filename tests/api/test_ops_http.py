"""The operations endpoints over real HTTP (the app under the local host, on Azurite): statuses,
problem+json errors, and bad input rejected before storage is touched."""

from __future__ import annotations

import httpx
import pytest

from devtools.testing.api_host import HostProcess

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]


def test_workers_answers_the_registry_shape(api_host: HostProcess) -> None:
    # The module's first request opens storage in a cold host: on a loaded machine that can take
    # longer than httpx's 5 s default.
    response = httpx.get(f"{api_host.url}/workers", timeout=60)
    assert response.status_code == 200
    assert response.json() == {
        "workers": [],
        "lost_after_s": 90.0,
        "pool": [],  # no machine was up in the last day
        "pool_window_s": 86400.0,
        "currency": "USD",
    }


def test_delete_of_an_unknown_or_malformed_id(api_host: HostProcess) -> None:
    unknown = httpx.delete(f"{api_host.url}/workflows/no-such-workflow")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("application/problem+json")
    assert "no-such-workflow" in unknown.json()["detail"]
    malformed = httpx.delete(f"{api_host.url}/workflows/..bad")
    assert malformed.status_code == 400


@pytest.mark.parametrize(
    ("query", "complaint"),
    [
        ("", "older_than_s"),
        ("older_than_s=-1", "older_than_s"),
        ("older_than_s=nan", "older_than_s"),
        ("older_than_s=10&status=running", "cannot be purged"),
        ("older_than_s=10&limit=0", "limit"),
        ("older_than_s=10&dry_run=maybe", "dry_run"),
    ],
)
def test_purge_rejects_bad_parameters(api_host: HostProcess, query: str, complaint: str) -> None:
    response = httpx.post(f"{api_host.url}/purge?{query}")
    assert response.status_code == 400
    assert complaint in response.json()["detail"]


def test_a_dry_run_purge_of_an_empty_deployment(api_host: HostProcess) -> None:
    response = httpx.post(f"{api_host.url}/purge?older_than_s=0&dry_run=true")
    assert response.status_code == 200
    assert response.json() == {
        "dry_run": True, "older_than_s": 0.0, "statuses": ["cancelled", "completed", "failed"],
        "workflows": [], "resumed": [], "next": None, "cache_entries_expired": 0,
        "cache_problem": None,
    }  # fmt: skip


def test_doctor_answers_a_report_and_checks_its_id(api_host: HostProcess) -> None:
    response = httpx.get(f"{api_host.url}/doctor")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"healthy", "checked_at", "workflow_id", "findings", "summary"}
    assert body["summary"]["partitions"] >= 1
    assert httpx.get(f"{api_host.url}/doctor", params={"id": "..bad"}).status_code == 400
    unknown = httpx.get(f"{api_host.url}/doctor", params={"id": "no-such-workflow"})
    assert unknown.status_code == 404
