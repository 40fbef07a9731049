"""The client's configuration and error handling, against a canned fake API on 127.0.0.1."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from shared.client import (
    ApiError,
    ApiUnreachableError,
    Client,
    ClientConfig,
    config_file_path,
)
from shared.errors import DagqError
from tests.support.fake_api import fake_api, workflow_body


def test_config_precedence_arguments_then_env_then_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('api_url = "http://file.example:1"\napi_key = "file-key"\n')
    env = {"DAGQ_CONFIG": str(config)}
    from_file = ClientConfig.resolve(env=env)
    assert (from_file.api_url, from_file.api_key) == ("http://file.example:1", "file-key")
    assert from_file.source == str(config)

    env |= {"DAGQ_API_URL": "http://env.example:2/api/", "DAGQ_API_KEY": "env-key"}
    from_env = ClientConfig.resolve(env=env)
    # A trailing /api (the route prefix) is accepted and normalised away.
    assert (from_env.api_url, from_env.api_key) == ("http://env.example:2", "env-key")

    from_args = ClientConfig.resolve("https://arg.example", "arg-key", env=env)
    assert (from_args.api_url, from_args.api_key) == ("https://arg.example", "arg-key")


def test_config_defaults_to_the_local_stack(tmp_path: Path) -> None:
    config = ClientConfig.resolve(env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert config.api_url == "http://127.0.0.1:7071"
    assert config.api_key is None
    assert config_file_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "dagq/config.toml"


def test_config_file_problems_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('api_url = "http://x"\nendpoint = "typo"\n')
    with pytest.raises(DagqError, match=r"unknown key.*endpoint"):
        ClientConfig.resolve(env={"DAGQ_CONFIG": str(bad)})
    with pytest.raises(DagqError, match="does not exist"):
        ClientConfig.resolve(env={"DAGQ_CONFIG": str(tmp_path / "missing.toml")})
    with pytest.raises(DagqError, match="http"):
        ClientConfig.resolve("ftp://nope", env={})


def test_function_key_is_sent_and_problem_details_are_kept() -> None:
    with fake_api() as api:
        api.on(
            "POST",
            "/api/workflows",
            400,
            {
                "type": "https://dagq.dev/problems/invalid-definition",
                "title": "Invalid workflow definition",
                "status": 400,
                "detail": "2 problems",
                "errors": [
                    {"location": "tasks.b.depends_on", "task": "b", "message": "unknown task 'x'"},
                    {"location": "tasks[2]", "task": None, "message": "duplicate name 'a'"},
                ],
            },
        )
        with Client(api.url, "secret-key") as client, pytest.raises(ApiError) as caught:
            client.submit("name: x\ntasks: []\n", workflow_id="wf-1")
    request = api.requests[0]
    assert request["headers"]["x-functions-key"] == "secret-key"
    assert request["headers"]["content-type"] == "application/yaml"
    assert request["query"] == "id=wf-1"
    error = caught.value
    assert error.status == 400
    assert error.is_invalid_definition
    assert error.title == "Invalid workflow definition"
    assert [e["location"] for e in error.errors] == ["tasks.b.depends_on", "tasks[2]"]
    assert "tasks.b.depends_on: unknown task 'x'" in str(error)


def test_unauthorised_and_non_json_errors_are_readable() -> None:
    with fake_api() as api:
        api.on("GET", "/api/workflows/a", 401, b"")
        api.on("GET", "/api/workflows/b", 502, "<html>Bad gateway</html>")
        with Client(api.url) as client:
            with pytest.raises(ApiError, match="DAGQ_API_KEY"):
                client.get("a")
            with pytest.raises(ApiError) as caught:
                client.get("b")
    assert caught.value.status == 502
    assert "Bad gateway" in str(caught.value)


def test_submit_mapping_sends_json_and_reads_created() -> None:
    with fake_api() as api:
        api.on("POST", "/api/workflows", 200, {"id": "wf-9", "status": "running", "url": "u"})
        with Client(api.url) as client:
            submitted = client.submit(
                {"name": "x", "tasks": [{"name": "a", "kwargs": {"cmd": "true"}}]}
            )
    assert api.requests[0]["headers"]["content-type"] == "application/json"
    assert submitted.id == "wf-9"
    assert submitted.created is False


def test_paths_are_escaped() -> None:
    with fake_api() as api, Client(api.url) as client, pytest.raises(ApiError) as caught:
        client.logs("wf", "../../etc/passwd")
    assert caught.value.is_not_found
    assert api.requests[0]["path"] == "/api/workflows/wf/tasks/..%2F..%2Fetc%2Fpasswd/log"


def test_unreachable_api_says_what_to_do() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}") as client, pytest.raises(ApiUnreachableError) as caught:
        client.get("wf")
    assert "make up" in str(caught.value)
    assert "DAGQ_API_URL" in str(caught.value)


def test_wait_rides_out_transient_errors_and_reports_progress() -> None:
    running = workflow_body(status="running", counts={"running": 1})
    done = workflow_body(status="completed", counts={"completed": 1})
    with fake_api() as api:
        api.on("GET", "/api/workflows/wf", 200, running)
        api.on("GET", "/api/workflows/wf", 503, {"title": "Service Unavailable", "status": 503})
        api.on("GET", "/api/workflows/wf", 502, b"bad gateway")
        api.on("GET", "/api/workflows/wf", 200, done)
        seen: list[str] = []
        with Client(api.url) as client:
            final = client.wait("wf", on_update=lambda w: seen.append(w.status), interval_s=0.01)
    assert final.status == "completed"
    assert seen == ["running", "completed"]


def test_wait_gives_up_on_errors_that_are_not_transient() -> None:
    with fake_api() as api:
        api.on("GET", "/api/workflows/wf", 404, {"title": "Not Found", "status": 404})
        with Client(api.url) as client, pytest.raises(ApiError) as caught:
            client.wait("wf", interval_s=0.01)
    assert caught.value.is_not_found
    assert len(api.requests) == 1


def test_wait_on_an_api_never_reached_gives_up_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dagq watch`` with the stack down fails as ``dagq logs -f`` does: at the first refused
    connection, not after five tries over some 45 s (riding out errors is for an API that
    answered before, a restart under a long wait)."""
    import shared.client.wait as waiting

    pauses: list[float] = []
    monkeypatch.setattr(waiting.time, "sleep", pauses.append)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}") as client, pytest.raises(ApiUnreachableError) as caught:
        client.wait("wf", interval_s=1.0)
    assert "make up" in str(caught.value)
    assert pauses == []


def test_submit_detects_json_and_yaml_flow_style() -> None:
    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "a", "status": "pending", "url": "u"})
        with Client(api.url) as client:
            client.submit('{"name": "x", "tasks": []}')
            client.submit("{name: x, tasks: [{name: a, kwargs: {cmd: 'true'}}]}")
            client.submit(b"name: x\n")
    types = [r["headers"]["content-type"] for r in api.requests]
    assert types == ["application/json", "application/yaml", "application/yaml"]


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DAGQ_API_KEY", raising=False)
    monkeypatch.delenv("DAGQ_API_SCOPE", raising=False)
    empty = tmp_path / "config.toml"
    empty.write_text("")
    return empty


@pytest.mark.parametrize(
    ("url", "key", "scope"),
    [
        ("http://dagq.example.com", "secret", ""),
        ("http://10.0.0.5:7071", "secret", ""),
        ("http://dagq.example.com", None, "api://dagq/user_impersonation"),
    ],
)
def test_credentials_never_cross_the_network_in_clear_text(
    url: str, key: str | None, scope: str, no_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the client sent the function key and the Entra token over plain http:// anywhere.
    monkeypatch.setenv("DAGQ_API_SCOPE", scope)
    with pytest.raises(DagqError, match=r"refusing to send .* in clear text") as refused:
        Client(url, key, config_path=no_config)
    assert "https://" in str(refused.value)


@pytest.mark.parametrize(
    "url", ["https://dagq.example.com", "http://127.0.0.1:7071", "http://localhost:7071"]
)
def test_a_key_goes_over_https_or_to_this_machine(url: str, no_config: Path) -> None:
    Client(url, "secret", config_path=no_config).close()


def test_plain_http_without_credentials_is_allowed(no_config: Path) -> None:
    Client("http://dagq.example.com", config_path=no_config).close()


def test_an_empty_answer_short_of_its_size_is_never_asked_again_at_once(
    monkeypatch: pytest.MonkeyPatch, no_config: Path
) -> None:
    # Before: a log answer with no bytes but a size past the offset was asked for again at once,
    # without pause: 200 requests in under a second, for good.
    from shared.client.task_logs import LogPiece

    client = Client("http://127.0.0.1:9", config_path=no_config)
    asked: list[int] = []

    def piece(*args: object, offset: int = 0, **kwargs: object) -> LogPiece:
        asked.append(offset)
        assert len(asked) < 50, "asked again and again without a pause"
        return LogPiece(attempt=1, data=b"", offset=offset, size=100, growing=len(asked) < 3)

    monkeypatch.setattr(client, "log_piece", piece)
    slept: list[float] = []
    pieces = list(client.log_pieces("wf", "t", follow=True, sleep=slept.append))
    assert pieces == []
    assert len(asked) == 3
    assert len(slept) == 2  # a pause before each new ask
    assert list(client.log_pieces("wf", "t")) == []  # not following: one answer, then done
    assert len(asked) == 4


def test_a_submit_whose_answer_was_lost_is_sent_again_under_the_same_id() -> None:
    """The API acted on the submit, the connection closed before its answer (issue #36): the
    client sends it again under the id it chose, and the API's 200 for that id is the workflow
    the first try created."""
    from devtools.testing.flaky_proxy import FlakyProxy

    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "x", "status": "pending", "url": "u"})
        api.on("POST", "/api/workflows", 200, {"id": "x", "status": "pending", "url": "u"})
        port = int(api.url.rsplit(":", 1)[1])
        with FlakyProxy("127.0.0.1", port, close_after=[1]) as proxy:
            with Client(f"http://127.0.0.1:{proxy.port}") as client:
                submitted = client.submit({"name": "x", "tasks": [{"name": "a"}]})
            assert proxy.closed_after == 1
    ids = [request["query"] for request in api.requests]
    assert len(ids) == 2
    assert ids[0] == ids[1]
    assert "id=" in ids[0]
    assert submitted.created is True


def test_an_invalid_definition_reads_as_the_cli_speaks() -> None:
    # Before: "fix every entry of 'errors' and submit again", the API's words about its JSON.
    error = ApiError(
        status=400,
        title="Invalid workflow definition",
        detail="the workflow definition has 2 problem(s); fix every entry of 'errors' and submit"
        " again",
        errors=[
            {"location": "tasks.b.depends_on", "task": "b", "message": "unknown task 'x'"},
            {"location": "tasks[2]", "task": None, "message": "duplicate name 'a'"},
        ],
    )
    text = error.describe()
    assert "'errors'" not in text
    assert text.splitlines()[0].endswith("2 problem(s); fix each one below and try again")
    assert "unknown task 'x'" in text


def test_a_url_that_is_not_a_dagq_api_says_so(no_config: Path) -> None:
    # Before: a 404 page (or Azurite's XML, on its port) read as "Not Found (HTTP 404)", exit 3,
    # as if the workflow did not exist.
    with fake_api() as api:
        api.on(
            "GET", "/api/workflows/wf", 404, "<html>nothing here</html>", content_type="text/html"
        )
        with (
            Client(api.url, config_path=no_config) as client,
            pytest.raises(ApiUnreachableError) as caught,
        ):
            client.get("wf")
    message = str(caught.value)
    assert "this is not a dagq API" in message
    assert "HTTP 404 (text/html)" in message
    assert "DAGQ_API_URL" in message


async def test_the_storage_port_is_not_a_dagq_api(azurite: object, no_config: Path) -> None:
    from devtools.azurite import Azurite

    assert isinstance(azurite, Azurite)
    url = f"http://127.0.0.1:{azurite.bound['blob']}"
    with Client(url, config_path=no_config) as client, pytest.raises(ApiUnreachableError) as caught:
        client.get("wf")
    assert "this is not a dagq API" in str(caught.value)
