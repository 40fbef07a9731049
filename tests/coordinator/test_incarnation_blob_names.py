"""Blob names a message may carry: an attempt's own, under its incarnation or in the flat layout
of workflows from before state version 6 — never another incarnation's (issue #30, item 2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.coordinator.envelope import Envelope
from shared.coordinator.outputs import bound_inline_outputs
from shared.coordinator.stats import PassStats
from shared.engine.transitions import new_state
from shared.messages import OutputRef, TaskCompletedEvent, TaskMessage
from shared.names import ResourceNames
from shared.storage.memory import memory_storage
from tests.coordinator.helpers import diamond

N = ResourceNames


def _completed(incarnation: int | None, **kw: object) -> TaskCompletedEvent:
    return TaskCompletedEvent(
        workflow_id="wf1", task="a", attempt=1, incarnation=incarnation, started_at=1.0,
        finished_at=2.0, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize("layout", [3, None])
def test_an_event_may_name_its_incarnations_blobs_or_the_flat_ones(layout: int | None) -> None:
    event = _completed(
        3,
        log_blob=N.log_blob("wf1", "a", 1, layout),
        output=OutputRef(blob=N.output_blob("wf1", "a", 1, layout), size=9),
    )
    assert event.log_blob == N.log_blob("wf1", "a", 1, layout)


def test_an_event_never_names_another_incarnations_blobs() -> None:
    with pytest.raises(ValidationError, match="is not this attempt's log blob"):
        _completed(3, log_blob=N.log_blob("wf1", "a", 1, 4))
    with pytest.raises(ValidationError, match="is not this attempt's output blob"):
        _completed(3, output=OutputRef(blob=N.output_blob("wf1", "a", 1, 4), size=9))
    with pytest.raises(ValidationError, match="is not this attempt's log blob"):
        _completed(None, log_blob=N.log_blob("wf1", "a", 1, 4))


def _message(**kw: object) -> TaskMessage:
    return TaskMessage(workflow_id="wf1", task="sink", attempt=1, queue="cpu", cmd="true", **kw)  # type: ignore[arg-type]


def test_a_task_message_names_its_blobs_under_its_incarnation() -> None:
    message = _message(incarnation=3, incarnation_blobs=True)
    assert message.blob_incarnation == 3
    assert message.claim_blob() == N.claim_blob("wf1", "sink", 1, 3, flat=False)
    assert message.claim_blob().startswith(N.outputs_prefix("wf1", 3))
    flat = _message(incarnation=3)
    assert flat.blob_incarnation is None
    assert flat.claim_blob() == N.claim_blob("wf1", "sink", 1, 3) == "wf1/sink/1/claim-3"
    assert "incarnation_blobs" not in flat.model_dump_json(exclude_none=True)  # as before
    with pytest.raises(ValidationError, match="needs an incarnation"):
        _message(incarnation_blobs=True)


def test_a_task_message_refuses_another_incarnations_upstream_names() -> None:
    bundle = N.upstream_blob("wf1", "sink", 1, 3)
    _message(incarnation=3, incarnation_blobs=True, upstream_blob=bundle)
    with pytest.raises(ValidationError, match="is not this attempt's"):
        _message(incarnation=3, upstream_blob=bundle)  # a flat message's bundle is flat
    ok = OutputRef(blob=N.output_blob("wf1", "p", 2, 3), size=9)
    _message(incarnation=3, incarnation_blobs=True, upstream={"p": ok})
    other = OutputRef(blob=N.output_blob("wf1", "p", 2, 4), size=9)
    with pytest.raises(ValidationError, match="not one of its output blobs"):
        _message(incarnation=3, incarnation_blobs=True, upstream={"p": other})


async def test_an_inline_output_of_another_incarnation_is_never_spilled_under_this_ones() -> None:
    storage = memory_storage("inc")
    state = new_state(diamond(), "wf1", 1.0, 2)
    big = "x" * 50_000
    envelopes = [
        Envelope("", f"m{inc}", 1, event=_completed(inc, output=OutputRef(inline=big, size=1)))
        for inc in (1, 2)
    ]
    stats = PassStats()
    await bound_inline_outputs(
        storage.outputs, state, envelopes, inline_limit=1000, state_limit=10_000, stats=stats
    )
    assert set(storage.outputs.container.blobs) == {N.output_blob("wf1", "a", 1, 2)}
    stale = envelopes[0].event
    assert isinstance(stale, TaskCompletedEvent)
    assert stale.output is not None
    assert stale.output.inline == big  # left as it came: the engine dead-letters it
