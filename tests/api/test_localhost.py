"""The local Functions host: host.json parsing, routing, schedules, and queue/timer/HTTP semantics
on a small probe app (its own function_app.py) run as a subprocess on Azurite."""

from __future__ import annotations

import itertools
import json
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from azure.storage.queue import QueueServiceClient

from devtools.azurite import Azurite
from devtools.localhost import (
    REPO_ROOT,
    HostError,
    TimerSchedule,
    compile_route,
    load_host_config,
    parse_timespan,
)
from devtools.testing.api_host import HostProcess, start_host


def test_timespans() -> None:
    assert parse_timespan("00:00:02") == 2
    assert parse_timespan("01:02:03.5") == 3723.5
    assert parse_timespan("1.00:00:00") == 86400
    assert parse_timespan(7) == 7
    with pytest.raises(HostError, match="hh:mm:ss"):
        parse_timespan("2s")


def test_repo_host_json_is_what_the_coordinator_needs() -> None:
    config = load_host_config(REPO_ROOT)
    assert config.route_prefix == "api"
    queues = config.queues
    assert queues.batch_size == 1
    assert queues.threshold == 0  # one invocation in flight
    assert queues.max_polling_interval_s <= 1  # a child starts within a second of its parent
    assert queues.max_dequeue_count == 5
    assert queues.message_encoding == "none"  # dagq's senders write plain text
    host = json.loads((REPO_ROOT / "host.json").read_text())
    assert host["extensionBundle"]["version"].startswith("[4.")
    assert "functionTimeout" in host


def test_route_templates() -> None:
    route = compile_route("workflows/{id}/tasks/{task}")
    match = route.fullmatch("Workflows/w1/tasks/t.a=1")
    assert match is not None
    assert match.groupdict() == {"id": "w1", "task": "t.a=1"}
    assert route.fullmatch("workflows/w1/tasks/a/b") is None
    assert compile_route("files/{*path}").fullmatch("files/a/b/c") is not None
    assert compile_route("items/{n:int}").fullmatch("items/3") is not None


def test_ncrontab_schedules_have_seconds_first() -> None:
    start = 1_700_000_000.0  # a multiple of 5 and 10
    every_5s = TimerSchedule("*/5 * * * * *", start)
    first = every_5s.next_after(start)
    assert first - start == 5
    assert every_5s.next_after(first + 12) == first + 15  # missed runs are skipped
    interval = TimerSchedule("00:00:03", start)
    assert interval.next_after(start) == start + 3
    with pytest.raises(HostError, match="six NCRONTAB fields"):
        TimerSchedule("*/5 * * * *", start)


PROBE_APP = """
import json, os, pathlib, time
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
OUT = pathlib.Path(os.environ["PROBE_OUT"])


def record(**fields):
    with OUT.open("a") as out:
        out.write(json.dumps(fields) + "\\n")


@app.function_name("on_message")
@app.queue_trigger(arg_name="msg", queue_name="%PROBE_QUEUE%", connection="PROBE_STORAGE")
def on_message(msg: func.QueueMessage) -> None:  # a plain function: the host runs it in a thread
    body = msg.get_body().decode()
    record(kind="message", body=body, dequeue_count=msg.dequeue_count)
    if body.startswith("fail"):
        raise RuntimeError("told to fail")


@app.function_name("tick")
@app.timer_trigger(arg_name="timer", schedule="%PROBE_SCHEDULE%")
async def tick(timer: func.TimerRequest) -> None:
    record(kind="tick", at=time.time())


@app.function_name("item")
@app.route(route="items/{name}", methods=["GET"])
async def item(req: func.HttpRequest) -> func.HttpResponse:
    body = {"name": req.route_params["name"], "query": dict(req.params)}
    return func.HttpResponse(json.dumps(body), mimetype="application/json")


@app.function_name("special")
@app.route(route="items/special", methods=["GET"])
async def special(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("special", status_code=299)


@app.function_name("echo")
@app.route(route="echo", methods=["POST"])
def echo(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(req.get_body(), headers={"X-Probe": "1"}, mimetype="text/plain")
"""

PROBE_HOST_JSON = {
    "version": "2.0",
    "extensions": {
        "http": {"routePrefix": "probe"},
        "queues": {
            "batchSize": 2,
            "newBatchThreshold": 1,
            "maxPollingInterval": "00:00:01",
            "visibilityTimeout": "00:00:01",
            "maxDequeueCount": 2,
            "messageEncoding": "base64",
        },
    },
}


@pytest.fixture(scope="module")
def probe(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    app_dir = Path(tmp_path_factory.mktemp("probe"))
    (app_dir / "function_app.py").write_text(textwrap.dedent(PROBE_APP))
    (app_dir / "host.json").write_text(json.dumps(PROBE_HOST_JSON))
    queue = "probe-" + uuid.uuid4().hex[:10]
    out = app_dir / "out.jsonl"
    env = {
        "PROBE_STORAGE": azurite.connection_string,
        "PROBE_QUEUE": queue,
        "PROBE_SCHEDULE": "*/1 * * * * *",
        "PROBE_OUT": str(out),
    }
    host = start_host(env, app_dir / "host.log", app_dir=app_dir)
    try:
        yield {"host": host, "queue": queue, "out": out, "conn": azurite.connection_string}
    finally:
        code = host.stop()
        assert code == 0, host.log()


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    lines = [json.loads(line) for line in out.read_text().splitlines() if line]
    return [r for r in lines if r["kind"] == kind]


def test_http_routing_of_the_probe_app(probe: dict[str, Any]) -> None:
    host: HostProcess = probe["host"]
    assert host.url.endswith("/probe")
    with httpx.Client(base_url=host.url, timeout=10) as http:
        response = http.get("/items/abc%20d", params={"x": "1"})
        assert response.status_code == 200
        assert response.json() == {"name": "abc d", "query": {"x": "1"}}
        special = http.get("/items/special")  # a literal segment wins over a parameter
        assert special.status_code == 299
        assert special.text == "special"
        echo = http.post("/echo", content=b"\x00\x01binary")
        assert echo.content == b"\x00\x01binary"
        assert echo.headers["x-probe"] == "1"
        assert echo.headers["content-type"].startswith("text/plain")
        not_allowed = http.post("/items/abc")
        assert not_allowed.status_code == 405
        assert "GET" in not_allowed.headers["allow"]
        assert http.get("/nothing/here").status_code == 404


def test_queue_trigger_retries_then_poisons(probe: dict[str, Any]) -> None:
    import base64

    with QueueServiceClient.from_connection_string(probe["conn"]) as service:
        queue = service.get_queue_client(probe["queue"])
        queue.create_queue()
        for body in ("ok-1", "fail-1", "ok-2"):
            queue.send_message(base64.b64encode(body.encode()).decode())
        queue.send_message("not base64 !")  # undecodable with messageEncoding base64
        poison = service.get_queue_client(probe["queue"] + "-poison")
        deadline = time.monotonic() + 30
        poisoned: list[str] = []
        while len(poisoned) < 2:
            assert time.monotonic() < deadline, records(probe["out"], "message")
            time.sleep(0.3)
            try:
                poisoned = [m.content for m in poison.peek_messages(max_messages=32)]
            except Exception:  # the poison queue is created on first use
                poisoned = []
        assert sorted(poisoned) == sorted([base64.b64encode(b"fail-1").decode(), "not base64 !"])
        deadline = time.monotonic() + 10
        while queue.peek_messages(max_messages=32):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    messages = records(probe["out"], "message")
    bodies = [m["body"] for m in messages]
    assert bodies.count("ok-1") == 1  # deleted after success
    assert bodies.count("ok-2") == 1
    attempts = [m["dequeue_count"] for m in messages if m["body"] == "fail-1"]
    assert attempts == [1, 2]  # retried after visibilityTimeout, poisoned at maxDequeueCount
    assert "not base64 !" not in bodies


def test_timer_fires_on_schedule(probe: dict[str, Any]) -> None:
    deadline = time.monotonic() + 15
    while len(records(probe["out"], "tick")) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    ticks = [r["at"] for r in records(probe["out"], "tick")]
    assert all(later > earlier for earlier, later in itertools.pairwise(ticks))


def test_missing_setting_is_a_clear_error(tmp_path: Path, azurite: Azurite) -> None:
    (tmp_path / "function_app.py").write_text(textwrap.dedent(PROBE_APP))
    env = {"PROBE_STORAGE": azurite.connection_string, "PROBE_OUT": str(tmp_path / "o")}
    with pytest.raises(RuntimeError, match="app setting PROBE_QUEUE is not set"):
        start_host(env, tmp_path / "host.log", app_dir=tmp_path)


def test_several_instances_share_the_work_and_stop_together(
    tmp_path: Path, azurite: Azurite
) -> None:
    import urllib.request

    from devtools.testing.partition_ids import ids_in_each_partition

    env = {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PARTITIONS": "2",
           "DAGQ_PREFIX": "i" + uuid.uuid4().hex[:10]}  # fmt: skip
    host = start_host(env, tmp_path / "host.log", extra_args=("--instances", "3"))
    children_file = Path(f"/proc/{host.process.pid}/task/{host.process.pid}/children")
    children = [int(pid) for pid in children_file.read_text().split()]
    try:
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children]
        assert len([c for c in commands if b"devtools.localhost" in c]) == 2
        definition = {"name": "i", "tasks": [{"name": "a", "kwargs": {"cmd": "true"},
                                              "queue": "nobody"}]}  # fmt: skip
        ids = [wids[0] for wids in ids_in_each_partition(2, 1, "inst").values()]
        for wid in ids:  # one workflow in each partition: each one's queue trigger activates it
            request = urllib.request.Request(
                f"{host.url}/workflows?id={wid}", data=json.dumps(definition).encode(),
                headers={"Content-Type": "application/json"}, method="POST",
            )  # fmt: skip
            urllib.request.urlopen(request, timeout=30).close()
        deadline = time.monotonic() + 60
        for wid in ids:
            while True:
                with urllib.request.urlopen(f"{host.url}/workflows/{wid}", timeout=30) as r:
                    if json.loads(r.read())["status"] == "running":
                        break
                assert time.monotonic() < deadline, f"{wid} was never activated"
                time.sleep(0.2)
    finally:
        assert host.stop() == 0, host.log()
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]


# -- web pages of other sites ---------------------------------------------------------------------

DEFINITION = "name: probe\ntasks:\n  - name: t\n    kwargs: {cmd: echo hi}\n"


@pytest.mark.azurite
@pytest.mark.subprocess
def test_a_web_page_of_another_site_cannot_use_the_local_stack(
    storage_env: dict[str, str], tmp_path: Path
) -> None:
    # Before: a cross-site "simple" POST (text/plain, no preflight) was answered 201 and its
    # command ran on the local workers; Host: attacker.example (DNS rebinding) was answered 200.
    host = start_host(storage_env, tmp_path / "host.log", extra_args=("--no-queues", "--no-timers"))
    try:
        own = host.url.split("/api")[0]
        plain = {"Content-Type": "text/plain"}
        refused = [
            ("POST", {**plain, "Origin": "https://attacker.example"}),
            ("POST", {**plain, "Origin": "null"}),
            ("POST", {**plain, "Sec-Fetch-Site": "cross-site"}),
            ("POST", {**plain, "Host": "attacker.example:7071"}),
            ("GET", {"Host": "attacker.example"}),
        ]
        with httpx.Client(timeout=30) as client:
            for method, headers in refused:
                body = DEFINITION if method == "POST" else None
                answer = client.request(
                    method, f"{host.url}/workflows", headers=headers, content=body
                )
                assert answer.status_code == 403, (headers, answer.text)
                assert answer.headers["content-type"] == "application/problem+json"
                assert answer.json()["detail"]
            listed = client.get(f"{host.url}/workflows").json()
            assert listed["items"] == []  # nothing was submitted
            for headers in ({}, {"Origin": own, "Sec-Fetch-Site": "same-origin"}):
                answer = client.post(f"{host.url}/workflows", content=DEFINITION,
                                     headers={**plain, **headers})  # fmt: skip
                assert answer.status_code == 201, answer.text
            localhost = host.url.replace("127.0.0.1", "localhost")
            assert client.get(f"{localhost}/workflows").status_code == 200
    finally:
        host.stop()
