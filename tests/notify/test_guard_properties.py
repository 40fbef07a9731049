"""Properties of the SSRF rules and the URL check (hypothesis): for any address, the strict rules
allow exactly the public ones (global, and neither reserved, multicast nor link-local);
link-local is refused whatever the settings; an IPv4-mapped IPv6 address is judged as its IPv4
address; the URL check answers any text without raising."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from shared.definition.passes.notify import url_problem
from shared.notify.guard import TargetRules, address_problem

V4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)
V6 = st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address)
LOOSE = TargetRules(allow_private=True, allow_http=True)


@given(st.one_of(V4, V6))
def test_strict_rules_allow_exactly_public_addresses(address: ipaddress._BaseAddress) -> None:
    judged = getattr(address, "ipv4_mapped", None) or address
    allowed = address_problem(address, TargetRules()) is None  # type: ignore[arg-type]
    inside = judged.is_link_local or judged.is_multicast or judged.is_reserved
    assert allowed == (judged.is_global and not inside)


@given(st.one_of(V4, V6))
def test_link_local_is_never_allowed(address: ipaddress._BaseAddress) -> None:
    judged = getattr(address, "ipv4_mapped", None) or address
    if judged.is_link_local:
        assert address_problem(address, LOOSE) is not None  # type: ignore[arg-type]
    else:
        assert address_problem(address, LOOSE) is None  # type: ignore[arg-type]


@given(V4)
def test_a_mapped_address_is_judged_as_ipv4(address: ipaddress.IPv4Address) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    for rules in (TargetRules(), LOOSE):
        assert (address_problem(mapped, rules) is None) == (address_problem(address, rules) is None)


@given(st.text(max_size=300))
def test_the_url_check_answers_any_text(text: str) -> None:
    problem = url_problem(text)
    assert problem is None or isinstance(problem, str)
    if problem is None:
        assert text.lower().startswith(("https://", "http://"))
