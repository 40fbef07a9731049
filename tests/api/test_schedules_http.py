"""``/api/schedules`` over real HTTP (the app under the local host, on Azurite): create, list,
show, pause, resume, delete, the 400s of bad input; and, with the host's sweep timer running, a
``* * * * *`` schedule whose first run starts within about 70 s (the local stack's promise)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from devtools.testing.api_host import HostProcess
from tests.api.documented import assert_documented

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

PLAIN = "name: hello\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n"
YAML = {"Content-Type": "application/yaml"}


@pytest.fixture(scope="module")
def http(api_only_host: HostProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_only_host.url, timeout=30) as client:
        yield client


def test_a_schedule_is_created_listed_shown_paused_resumed_and_deleted(http: httpx.Client) -> None:
    params = {"name": "every", "cron": "*/5 * * * *", "timezone": "Europe/Berlin",
              "concurrency": "forbid", "catch_up": "2"}  # fmt: skip
    response = http.post("/schedules", params=params, content=PLAIN, headers=YAML)
    assert response.status_code == 201, response.text
    body = assert_documented(response, "/schedules")
    assert response.headers["Location"] == body["url"]
    assert body["url"].endswith("/api/schedules/every")
    assert (body["cron"], body["timezone"], body["concurrency"], body["catch_up"]) == (
        "*/5 * * * *", "Europe/Berlin", "forbid", 2
    )  # fmt: skip
    assert len(body["next_runs"]) == 3
    assert body["runs"] == []
    assert body["paused"] is False

    again = http.post("/schedules", params=params, content=PLAIN, headers=YAML)
    assert again.status_code == 200  # the same schedule: found
    other = http.post("/schedules", params={**params, "cron": "0 2 * * *"}, content=PLAIN,
                      headers=YAML)  # fmt: skip
    assert other.status_code == 409
    assert "exists" in other.json()["detail"]

    listed = http.get("/schedules")
    names = [s["name"] for s in assert_documented(listed, "/schedules")["schedules"]]
    assert "every" in names

    paused = http.post("/schedules/every/pause")
    assert assert_documented(paused, "/schedules/{name}/pause")["paused"] is True
    assert paused.json()["next_runs"] == []
    resumed = http.post("/schedules/every/resume")
    assert assert_documented(resumed, "/schedules/{name}/resume")["paused"] is False
    shown = http.get("/schedules/every")
    assert assert_documented(shown, "/schedules/{name}")["name"] == "every"

    deleted = http.delete("/schedules/every")
    assert assert_documented(deleted, "/schedules/{name}") == {"name": "every", "deleted": True}
    assert http.delete("/schedules/every").json()["deleted"] is False
    assert http.get("/schedules/every").status_code == 404


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"name": "a/b", "cron": "* * * * *"}, "invalid schedule name"),
        ({"name": "x" * 48, "cron": "* * * * *"}, "invalid schedule name"),
        ({"name": "bad-cron", "cron": "61 * * * *"}, "invalid cron"),
        ({"name": "six", "cron": "0 0 2 * * *"}, "has 6 fields"),
        ({"name": "tz", "cron": "* * * * *", "timezone": "Mars/Base"}, "unknown time zone"),
        ({"name": "tz2", "cron": "* * * * *", "timezone": "../../etc/passwd"}, "unknown time zone"),
        ({"name": "cc", "cron": "* * * * *", "concurrency": "never"}, "concurrency"),
        ({"name": "cu", "cron": "* * * * *", "catch_up": "101"}, "catch_up"),
        ({"name": "cu0", "cron": "* * * * *", "catch_up": "0"}, "from 1 to 100"),
        ({"cron": "* * * * *"}, "'name' is required"),
        ({"name": "nocron"}, "'cron' is required"),
    ],
)
def test_bad_input_is_a_400_that_names_it(
    http: httpx.Client, params: dict[str, str], says: str
) -> None:
    response = http.post("/schedules", params=params, content=PLAIN, headers=YAML)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert says in response.json()["detail"]
    assert http.get("/schedules/" + params.get("name", "x").replace("/", "_")).status_code in (
        400, 404
    )  # fmt: skip  # nothing was written


def test_a_definition_that_does_not_compile_is_a_400_listing_its_problems(
    http: httpx.Client,
) -> None:
    bad = "name: n\ntasks:\n  - name: a\n    depends_on: [nope]\n    kwargs: {cmd: echo}\n"
    response = http.post("/schedules", params={"name": "broken", "cron": "* * * * *"},
                         content=bad, headers=YAML)  # fmt: skip
    assert response.status_code == 400
    assert "nope" in response.text
    assert http.get("/schedules/broken").status_code == 404


@pytest.mark.slow
def test_the_local_host_starts_an_every_minute_schedule_within_70_s(
    api_host: HostProcess,
) -> None:
    with httpx.Client(base_url=api_host.url, timeout=30) as client:
        created = client.post("/schedules", params={"name": "soon", "cron": "* * * * *"},
                              content=PLAIN, headers=YAML)  # fmt: skip
        assert created.status_code == 201, created.text
        started = time.monotonic()
        runs: list[dict[str, object]] = []
        while time.monotonic() - started < 75 and not runs:
            time.sleep(1)
            runs = client.get("/schedules/soon").json()["runs"]
        waited = time.monotonic() - started
        print(f"schedule_first_run_s={waited:.1f}")
        assert runs, f"no run started in {waited:.0f} s:\n{api_host.log()[-3000:]}"
        [run] = runs
        assert str(run["id"]).startswith("soon-")
        assert client.get(f"/workflows/{run['id']}").status_code == 200
        client.delete("/schedules/soon")
