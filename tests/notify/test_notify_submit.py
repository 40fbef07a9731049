"""Notification targets at submit (issue 29): ``notify:`` in a definition, ``?notify=URL`` /
``--notify URL`` / ``Client.submit(notify=)``, stored in the definition blob and compared by an
idempotent submit."""

from __future__ import annotations

from urllib.parse import parse_qs

import azure.functions as func
import pytest

from shared.api import service
from shared.api.notify_query import notify_params
from shared.codec.definition import decode_definition, encode_definition
from shared.definition.compiler import compile_text
from shared.definition.passes.notify import with_notify
from shared.definition.workflow import NotifyTarget
from shared.errors import ConflictError, DefinitionError, RequestError
from shared.storage.memory import memory_storage

NOW = 1_800_000_000.0
BASE = """
name: nightly
tasks:
  - {name: a, kwargs: {cmd: "true"}}
"""
WITH_NOTIFY = (
    BASE
    + """
notify:
  - url: https://hooks.example.com/dagq
    events: [failed, task_failed]
    secret: s3cret
  - {url: "https://hooks.slack.com/services/T/B/X", format: slack}
"""
)


def issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(DefinitionError) as caught:
        compile_text(text)
    return [(i.location, i.message) for i in caught.value.issues]


def test_notify_compiles_to_targets_with_default_events() -> None:
    wf = compile_text(WITH_NOTIFY)
    assert wf.notify == (
        NotifyTarget("https://hooks.example.com/dagq", ("failed", "task_failed"), "s3cret"),
        NotifyTarget(
            "https://hooks.slack.com/services/T/B/X",
            ("completed", "failed", "cancelled"),
            None,
            "slack",
        ),
    )


def test_notify_survives_the_definition_blob_and_needs_version_4() -> None:
    wf = compile_text(WITH_NOTIFY)
    data = encode_definition(wf)
    assert data[3] == 4
    assert decode_definition(data).notify == wf.notify
    assert encode_definition(compile_text(BASE))[3] == 1  # no notify: the old version


@pytest.mark.parametrize(
    ("entry", "location", "words"),
    [
        ("{url: 'ftp://x.example/'}", "notify[0].url", "https://"),
        ("{url: 'https://'}", "notify[0].url", "no host"),
        ("{url: 'https://u:p@x.example/'}", "notify[0].url", "credentials"),
        ("{url: 'https://x.example/a b'}", "notify[0].url", "spaces"),
        ("{url: 'https://x.example:99999/'}", "notify[0].url", "Port"),
        ("{url: 'https://x.example/', events: [failed, failed]}", "notify[0].events", "twice"),
    ],
)
def test_a_bad_webhook_is_located(entry: str, location: str, words: str) -> None:
    found = issues(BASE + f"notify:\n  - {entry}\n")
    assert any(loc == location and words in msg for loc, msg in found), found


def test_shape_errors_name_the_field() -> None:
    found = issues(BASE + "notify:\n  - {url: 'https://x.example/', events: [done], format: xml}\n")
    locations = {loc for loc, _ in found}
    assert any("events" in loc for loc in locations), found
    assert any("format" in loc for loc in locations), found


def test_at_most_ten_webhooks() -> None:
    many = "".join(f"  - {{url: 'https://h{i}.example/'}}\n" for i in range(11))
    assert ("notify", "at most 10 webhooks, got 11") in issues(BASE + "notify:\n" + many)


def test_with_notify_adds_submit_urls_once_and_locates_bad_ones() -> None:
    wf = compile_text(WITH_NOTIFY)
    added = with_notify(wf, ["https://hooks.example.com/dagq", "https://b.example/h"])
    assert [t.url for t in added.notify][2:] == ["https://b.example/h"]
    assert added.notify[2].events == ("completed", "failed", "cancelled")
    with pytest.raises(DefinitionError) as caught:
        with_notify(wf, ["https://ok.example/", "javascript:alert(1)"])
    assert [i.location for i in caught.value.issues] == ["--notify[1]"]


async def test_submit_stores_notify_urls_and_a_repeat_compares_them() -> None:
    storage = memory_storage("notify")
    wf, encoded = service.compile_definition(BASE)
    first = await service.submit(
        storage, wf, now=NOW, workflow_id="n1", encoded=encoded, notify=["https://a.example/h"]
    )
    assert first.created
    stored = decode_definition(await storage.workflows.read_definition("n1"))
    assert [t.url for t in stored.notify] == ["https://a.example/h"]
    again = await service.submit(
        storage, wf, now=NOW, workflow_id="n1", notify=["https://a.example/h"]
    )
    assert not again.created
    with pytest.raises(ConflictError):
        await service.submit(storage, wf, now=NOW, workflow_id="n1", notify=["https://b.example/"])
    with pytest.raises(ConflictError):
        await service.submit(storage, wf, now=NOW, workflow_id="n1")


def test_compile_definition_takes_notify() -> None:
    wf, data = service.compile_definition(BASE, notify=["https://a.example/h"])
    assert decode_definition(data).notify == wf.notify == (NotifyTarget("https://a.example/h"),)


def _req(url: str) -> func.HttpRequest:
    return func.HttpRequest("POST", url, headers={}, params={}, body=b"x")


def test_notify_query_is_repeatable_and_checked() -> None:
    url = (
        "http://h/api/workflows?id=x&notify=https%3A%2F%2Fa.example%2Fh%3Fk%3D1%2C2"
        "&notify=https://b.example/"
    )
    assert notify_params(_req(url)) == ("https://a.example/h?k=1,2", "https://b.example/")
    assert notify_params(_req("http://h/api/workflows")) == ()
    with pytest.raises(RequestError) as caught:
        notify_params(_req("http://h/api/workflows?notify=file:///etc/passwd"))
    assert caught.value.http_status == 400
    assert "notify" in str(caught.value)


def test_client_sends_each_notify_url_as_its_own_parameter() -> None:
    import dagq
    from tests.support.fake_api import fake_api

    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "wf-9", "status": "pending", "url": "u"})
        with dagq.Client(api.url) as client:
            client.submit(BASE, notify=["https://a.example/h?x=1", "https://b.example/"])
    query = parse_qs(api.requests[0]["query"])
    assert query["notify"] == ["https://a.example/h?x=1", "https://b.example/"]


def test_the_workflow_view_and_dagq_status_show_the_webhooks_by_host() -> None:
    from rich.console import Console

    from shared.api.reads import workflow_view
    from shared.cli.render import status_view
    from shared.engine import new_state

    wf = compile_text(WITH_NOTIFY)
    view = workflow_view(wf, new_state(wf, "n1", NOW, 7))
    shown = view.model_dump(mode="json")["notify"]
    assert shown == [
        {"host": "hooks.example.com", "events": ["failed", "task_failed"], "format": "json",
         "signed": True},
        {"host": "hooks.slack.com", "events": ["completed", "failed", "cancelled"],
         "format": "slack", "signed": False},
    ]  # fmt: skip
    assert "s3cret" not in view.model_dump_json()
    assert "/services/" not in view.model_dump_json()  # a Slack URL is its credential
    console = Console(width=200, record=True)
    console.print(status_view(view))
    text = console.export_text()
    assert (
        "notifies hooks.example.com (failed, task_failed, signed); hooks.slack.com (completed,"
        " failed, cancelled, slack)"
    ) in text
