"""SSRF (issue 29): a deployment refuses webhook targets on loopback, private, link-local and
other non-public addresses, and plain http, unless its settings allow them; a name is refused
when any address it resolves to is, and the request connects only to the addresses checked."""

from __future__ import annotations

import pytest

from shared.notify.errors import RefusedTarget
from shared.notify.guard import TargetRules, checked_addresses, url_target
from shared.notify.post import post_webhook
from tests.notify.receiver import receiver

STRICT = TargetRules()
LOCAL = TargetRules(allow_private=True, allow_http=True)


def fake_dns(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"no such host {host}")
        return table[host]

    return resolve


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://hooks.example.com/x", "http:// is refused"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://[::1]/x", "loopback"),
        ("https://10.1.2.3/x", "not a public address"),
        ("https://192.168.0.10/x", "not a public address"),
        ("https://172.16.5.5/x", "not a public address"),
        ("https://100.64.0.1/x", "not a public address"),
        ("https://0.0.0.0/x", "not a public address"),
        ("https://169.254.169.254/metadata", "link-local"),
        ("https://[fe80::1]/x", "link-local"),
        ("https://[::ffff:169.254.169.254]/x", "link-local"),
        ("https://[::ffff:127.0.0.1]/x", "loopback"),
        ("https://localhost/x", "loopback"),
    ],
)
def test_literal_targets_are_refused(url: str, words: str) -> None:
    with pytest.raises(RefusedTarget, match=words):
        url_target(url, STRICT)


def test_settings_allow_loopback_and_http_but_never_link_local() -> None:
    assert url_target("http://127.0.0.1:8080/x", LOCAL)[:2] == ("127.0.0.1", 8080)
    with pytest.raises(RefusedTarget, match="link-local"):
        url_target("http://169.254.169.254/latest/meta-data", LOCAL)


def test_a_public_literal_is_allowed() -> None:
    assert url_target("https://8.8.8.8/hook", STRICT)[:2] == ("8.8.8.8", 443)


async def test_every_resolved_address_is_checked() -> None:
    dns = fake_dns(
        {
            "hooks.example.com": ["93.184.216.34"],
            "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
            "meta.example.com": ["169.254.169.254"],
            "inside.example.com": ["10.0.0.7"],
        }
    )
    assert [str(a) for a in await checked_addresses("hooks.example.com", 443, STRICT, dns)] == [
        "93.184.216.34"
    ]
    for host, words in [
        ("rebind.example.com", "127.0.0.1 is loopback"),
        ("meta.example.com", "link-local"),
        ("inside.example.com", "not a public address"),
        ("nowhere.example.com", "does not resolve"),
    ]:
        with pytest.raises(RefusedTarget, match=words):
            await checked_addresses(host, 443, STRICT, dns)


async def test_a_name_resolving_inside_is_never_connected_to() -> None:
    dns = fake_dns({"evil.example.com": ["127.0.0.1"]})
    rules = TargetRules(allow_http=True)  # http allowed, private not: the name is refused
    with receiver() as hook:
        url = f"http://evil.example.com:{hook.port}"
        with pytest.raises(RefusedTarget, match="loopback"):
            await post_webhook(f"{url}/steal", b"{}", {}, rules, 5.0, dns)
        assert hook.requests == []
        # Allowed, the request goes to the very address checked, with the name as Host.
        answer = await post_webhook(f"{url}/ok", b"{}", {}, LOCAL, 5.0, dns)
        assert answer.ok
        assert [(r.path, r.headers["Host"]) for r in hook.requests] == [
            ("/ok", f"evil.example.com:{hook.port}")
        ]
