"""Listing by name prefix is exact for every prefix, on the memory index and on Azurite.

Found by an adversarial review: ``GET /api/workflows?name=%ED%9F%BF`` (a prefix ending in U+D7FF)
answered 500, because the range's upper bound became a lone surrogate that cannot be encoded.
The bound is now valid text for every prefix and holds in code-point and UTF-16 order alike, and
the Azure adapter checks each row against the prefix again.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shared.states import WorkflowStatus
from shared.storage.azure.index import prefix_upper_bound
from shared.storage.ports import IndexRow, Storage

# Any text a workflow name or a filter can hold: no control characters, no lone surrogates.
# Characters at the edges of the planes and of the surrogate block are the interesting ones.
EDGES = "\x20\x7e\x7f\u00ff\ud7fe\ud7ff\ue000\ufffe\uffff\U00010000\U0010fffe\U0010ffff"
CHARS = st.one_of(
    st.sampled_from(EDGES),
    st.characters(blacklist_categories=("Cs", "Cc")),
)
TEXT = st.text(CHARS, max_size=4)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be")


@given(prefix=TEXT.filter(bool), rest=TEXT)
@example(prefix="\ud7ff", rest="\uffff")
@example(prefix="\U0010ffff", rest="\uffff")
@example(prefix="a\uffff", rest="\U0010ffff")
def test_the_upper_bound_is_above_every_extension_in_both_orders(prefix: str, rest: str) -> None:
    upper = prefix_upper_bound(prefix)
    if upper is None:
        assert set(prefix) <= {"\uffff", "\U0010ffff"}
        return
    upper.encode("utf-8")  # valid text: it can be sent to the service
    name = prefix + rest
    assert prefix <= name < upper  # code-point order
    assert _utf16(prefix) <= _utf16(name) < _utf16(upper)  # UTF-16 code-unit order


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(ValueError, match="surrogate"):
        prefix_upper_bound("a\ud800")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names=st.lists(TEXT, min_size=1, max_size=5), prefix=TEXT, cut=st.integers(0, 4))
@example(names=["\ud7ff", "\ud7ffx", "\U00010000"], prefix="\ud7ff", cut=0)
@example(names=["\uffff", "\U0010ffff", "\ue000"], prefix="\U0010ffff", cut=0)
async def test_listing_by_prefix_is_exact(
    storage: Storage, names: list[str], prefix: str, cut: int
) -> None:
    # Each example writes rows of its own (a fresh tag starts every name), so the examples that
    # share this storage never see each other's rows.
    tag = uuid.uuid4().hex[:8]
    chosen = tag + (names[0][:cut] if cut else prefix)
    for i, name in enumerate(names):
        created = 1000.0 + i
        await storage.index.create(
            IndexRow(f"w{tag}{i}", tag + name, WorkflowStatus.RUNNING, created, created)
        )
    page = await storage.index.list(name_prefix=chosen, limit=50)
    expected = sorted(
        f"w{tag}{i}" for i, name in enumerate(names) if (tag + name).startswith(chosen)
    )
    assert sorted(row.workflow_id for row in page.rows) == expected
    assert page.next is None
