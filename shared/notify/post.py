"""The HTTP requests of a delivery: a webhook POST through ``CheckedResolver`` (every address
checked, and connected to as checked: ``shared.notify.guard``), and the Event Grid topic's POST
with the app's Microsoft Entra token. Redirects are not followed (one could lead inside)."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from shared.notify.errors import RefusedTarget
from shared.notify.guard import (
    Resolve,
    TargetRules,
    checked_addresses,
    system_resolve,
    url_target,
)

MAX_ANSWER_BYTES = 4096
"""Most bytes of an endpoint's answer kept (for the reason of a failure)."""
EVENTGRID_SCOPE = "https://eventgrid.azure.net/.default"


@dataclass(frozen=True)
class Answer:
    """How a POST went: ``status`` (None: no HTTP answer), and what to say about it."""

    status: int | None
    detail: str

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def permanent(self) -> bool:
        """A client error no retry mends (not 408 timeout, 425 too early, 429 slow down)."""
        return self.status is not None and 400 <= self.status < 500 and self.status not in (
            408, 425, 429,
        )  # fmt: skip


class CheckedResolver(AbstractResolver):
    """The HTTP client's resolver: the addresses ``checked_addresses`` allowed, nothing else."""

    def __init__(self, rules: TargetRules, resolve: Resolve) -> None:
        self.rules = rules
        self._resolve = resolve
        self.refused: RefusedTarget | None = None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            addresses = await checked_addresses(host, port, self.rules, self._resolve)
        except RefusedTarget as exc:
            self.refused = exc
            raise
        return [
            ResolveResult(
                hostname=host,
                host=str(a),
                port=port,
                proto=0,
                flags=socket.AI_NUMERICHOST,
                family=socket.AF_INET6 if a.version == 6 else socket.AF_INET,
            )
            for a in addresses
        ]

    async def close(self) -> None:
        return None


async def post_webhook(
    url: str,
    body: bytes,
    headers: dict[str, str],
    rules: TargetRules,
    timeout_s: float,
    resolve: Resolve = system_resolve,
) -> Answer:
    """POST ``body`` to a webhook; RefusedTarget when the rules forbid where it points."""
    url_target(url, rules)  # the scheme, and an IP literal (the resolver never sees those)
    resolver = CheckedResolver(rules, resolve)
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, force_close=True)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
            session.post(url, data=body, headers=headers, allow_redirects=False) as response,
        ):
            answer = await response.content.read(MAX_ANSWER_BYTES)
            text = answer.decode("utf-8", "replace").strip()[:200]
            return Answer(response.status, f"HTTP {response.status} {response.reason}: {text}")
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        if resolver.refused is not None:
            raise resolver.refused from None
        return Answer(None, f"{type(exc).__name__}: {exc}"[:300])


_credential: Any = None


async def post_eventgrid(endpoint: str, events: list[dict[str, Any]], timeout_s: float) -> Answer:
    """POST CloudEvents to an Event Grid topic, as the app's identity (role: EventGrid Data
    Sender on the topic, infra/modules/eventgrid.bicep)."""
    global _credential
    from azure.identity.aio import DefaultAzureCredential

    if _credential is None:
        _credential = DefaultAzureCredential()
    try:
        token = await _credential.get_token(EVENTGRID_SCOPE)
    except Exception as exc:  # no identity, or Entra unreachable: tried again later
        return Answer(None, f"no token for Event Grid: {type(exc).__name__}: {exc}"[:300])
    headers = {
        "Authorization": f"Bearer {token.token}",
        "Content-Type": "application/cloudevents-batch+json; charset=utf-8",
    }
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(endpoint, data=json.dumps(events).encode(), headers=headers) as response,
        ):
            text = (await response.content.read(MAX_ANSWER_BYTES)).decode("utf-8", "replace")
            return Answer(response.status, f"HTTP {response.status}: {text.strip()[:200]}")
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        return Answer(None, f"{type(exc).__name__}: {exc}"[:300])
