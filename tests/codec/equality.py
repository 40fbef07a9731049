"""Comparing runtime states column by column (the codec's and the engine's property tests)."""

from __future__ import annotations

from shared.engine.state import RuntimeState


def assert_same(a: RuntimeState, b: RuntimeState) -> None:
    """Every observable field and the derived bookkeeping are equal."""
    for name in (
        "workflow_id", "status", "run", "created_at", "updated_at", "finished_at",
        "cancel_requested", "cancel_requested_at", "error", "n_ok", "n_bad", "n_terminal",
        "base_attempt", "sent_ms", "history", "n_history", "incarnation", "upstream_digests",
        "definition",
    ):  # fmt: skip
        assert getattr(a, name) == getattr(b, name), name
    assert a.counts() == b.counts()
    assert [a.task(i) for i in range(len(a))] == [b.task(i) for i in range(len(b))]
    assert [t for t in a.ready if a.codes[t] == 1] == list(b.ready)
