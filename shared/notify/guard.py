"""Which webhook targets a deployment may call (SSRF): never link-local (169.254.0.0/16 and
fe80::/10: the instance metadata endpoint), and not loopback, private, shared, reserved,
multicast or unspecified addresses, nor plain ``http://``, unless its settings allow them
(``DAGQ_NOTIFY_ALLOW_PRIVATE``, ``DAGQ_NOTIFY_ALLOW_HTTP``: the local stack and the tests).

A host name is resolved here and *every* address it resolves to is checked; the request then
connects to those very addresses (``CheckedResolver`` is the HTTP client's resolver), so a name
that resolves to a public address when checked and to 127.0.0.1 when connecting (DNS rebinding)
cannot reach inside.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from shared.notify.errors import RefusedTarget

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolve = Callable[[str, int], Awaitable[list[str]]]
"""Host name and port -> the IP addresses it resolves to (tests pass a fake: no DNS in tests)."""


@dataclass(frozen=True)
class TargetRules:
    """What a deployment allows (``Settings.notify_allow_private`` / ``notify_allow_http``)."""

    allow_private: bool = False
    allow_http: bool = False


def address_problem(address: Address, rules: TargetRules) -> str | None:
    """Why a webhook may not connect to ``address``, or None."""
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    if address.is_link_local:
        return f"{address} is link-local (169.254.0.0/16, fe80::/10: the metadata endpoint)"
    private = (
        address.is_loopback
        or address.is_private
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
        or not address.is_global
    )
    if private and not rules.allow_private:
        what = "loopback" if address.is_loopback else "not a public address"
        return f"{address} is {what} (DAGQ_NOTIFY_ALLOW_PRIVATE allows private targets)"
    return None


def url_target(url: str, rules: TargetRules) -> tuple[str, int, Address | None]:
    """The host and port of a webhook URL (and its address when the host is an IP literal,
    checked here); RefusedTarget for a scheme or literal address the rules forbid."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and rules.allow_http):
        raise RefusedTarget(
            f"{scheme}:// is refused: webhooks use https:// (DAGQ_NOTIFY_ALLOW_HTTP allows http)"
        )
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        problem = address_problem(literal, rules)
        if problem:
            raise RefusedTarget(problem)
    elif _is_localhost(host) and not rules.allow_private:
        raise RefusedTarget(f"{host} is loopback (DAGQ_NOTIFY_ALLOW_PRIVATE allows it)")
    return host, port, literal


def _is_localhost(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


async def system_resolve(host: str, port: int) -> list[str]:
    """The addresses of ``host`` from the system's resolver."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(
    host: str, port: int, rules: TargetRules, resolve: Resolve = system_resolve
) -> list[Address]:
    """Every address ``host`` resolves to, each checked; RefusedTarget if any is forbidden (a
    name with one inside address is refused whole: the client might pick that one)."""
    try:
        found = await resolve(host, port)
    except OSError as exc:
        raise RefusedTarget(f"{host} does not resolve: {exc}") from None
    if not found:
        raise RefusedTarget(f"{host} resolves to no address")
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    for address in addresses:
        problem = address_problem(address, rules)
        if problem:
            raise RefusedTarget(f"{host} resolves to {problem}")
    return addresses
