"""Issue 11 §5: the event decoder and the coordinator fuzzed with hypothesis.

Arbitrary text, arbitrary JSON and event-shaped objects whose fields are drawn within and beyond
their bounds: the decoder returns a bounded event or raises MessageError (nothing else); the
coordinator applies, deduplicates, orphans or dead-letters every one of them with a reason, every
pass ends, and a witness workflow's event sent alongside is applied in the first pass."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.coordinator import Coordinator
from shared.errors import MessageError
from shared.limits import MAX_COUNTER, MAX_TIMESTAMP_S
from shared.messages import TaskCompletedEvent, TaskFailedEvent, decode_event
from shared.names import ResourceNames
from shared.states import WorkflowStatus
from shared.storage.memory import memory_storage
from tests.coordinator.helpers import FakeClock, diamond, fast_options, load, submit

NAMES = ResourceNames("mem")
OPTIONS = fast_options()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def within_or_beyond(good: list[Any], bad: list[Any], other: st.SearchStrategy[Any]) -> Any:
    """Values within bounds half the time, the rest at or beyond them, or anything at all."""
    return st.sampled_from(good) | st.sampled_from(bad) | other


ids = within_or_beyond(["good", "ghost"], ["../x", "", "a" * 65, "good/.."], st.text(max_size=70))
tasks = within_or_beyond(["a", "b", "d"], ["zz", "../../etc", "", "a" * 129], st.text(max_size=9))
counters = within_or_beyond([1, 2], [0, -1, 2**31, 2**32, 2**63], st.integers())
times = within_or_beyond(
    [1_800_000_000.0], [0.0, -1.0, 1e10, 1e300, math.nan, math.inf], st.floats()
)
blobs = within_or_beyond(
    [None, ResourceNames.log_blob("good", "a", 1)],
    ["../secretstuff/host.json", ResourceNames.log_blob("good", "a", 2)],
    st.text(),
)
outputs = within_or_beyond(
    [None, {"inline": 1, "size": 1}],
    [
        {"inline": "x" * 5000},
        {"blob": ResourceNames.output_blob("good", "a", 1)},
        {"blob": "x", "inline": 1},
    ],
    st.fixed_dictionaries({}, optional={"inline": json_values, "blob": blobs, "size": counters}),
)
texts = within_or_beyond([None, "why"], ["x" * 3000, "\x00"], st.text(max_size=50))
OPTIONAL: dict[str, Any] = {
    "worker": texts, "output": outputs, "log_blob": blobs, "error": texts, "reason": texts,
    "exit_code": counters, "started_at": times, "extra": json_values,
}  # fmt: skip


def event_objects(ids: Any, tasks: Any) -> Any:
    """Objects of every event kind: its required fields always there, fuzzed, plus extras."""
    counter = counters
    required: dict[str, dict[str, Any]] = {
        "activate": {},
        "cancel": {},
        "retry": {"run": counter},
        "started": {"task": tasks, "attempt": counter, "started_at": times},
        "completed": {"task": tasks, "attempt": counter, "started_at": times, "finished_at": times},
        "failed": {"task": tasks, "attempt": counter, "finished_at": times},
    }
    return st.one_of(
        *(
            st.fixed_dictionaries(
                {"kind": st.just(kind), "workflow_id": ids, **fields},
                optional={k: v for k, v in OPTIONAL.items() if k not in fields},
            )
            for kind, fields in required.items()
        )
    )


messages = (
    event_objects(ids, tasks).map(lambda obj: json.dumps(obj, allow_nan=True))
    | json_values.map(lambda value: json.dumps(value, allow_nan=True))
    | st.text(max_size=200)
)


aimed = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["started", "completed", "failed"]),
        "workflow_id": st.just("good"),
        "task": st.just("a"),
        "attempt": st.sampled_from([1, 2**32]),
        "started_at": st.sampled_from([1e300, -1e300, 1.8e9, math.inf, math.nan]),
        "finished_at": st.sampled_from([1e300, 1.8e9, -1e300, math.inf, 1e10 + 1]),
    },
    optional={k: v for k, v in OPTIONAL.items() if k != "started_at"},
).map(lambda obj: json.dumps(obj, allow_nan=True))
"""Task events for the running workflow's running task, with timestamps and attempts at and
beyond their bounds (before the decode bounds, +-1e300 wedged the coordinator)."""


def _bounded(event: Any) -> None:
    """What a decoded event guarantees."""
    assert 1 <= getattr(event, "attempt", 1) <= MAX_COUNTER
    for name in ("started_at", "finished_at"):
        value = getattr(event, name, None)
        assert value is None or (math.isfinite(value) and 0 <= value <= MAX_TIMESTAMP_S)
    if isinstance(event, TaskCompletedEvent | TaskFailedEvent):
        key = (event.workflow_id, event.task, event.attempt)
        assert event.log_blob in (None, NAMES.log_blob(*key))
        if isinstance(event, TaskCompletedEvent) and event.output is not None:
            assert event.output.blob in (None, NAMES.output_blob(*key))


@settings(max_examples=400, deadline=None)
@given(text=messages)
def test_decoding_returns_a_bounded_event_or_a_message_error(text: str) -> None:
    try:
        event = decode_event(text)
    except MessageError as exc:
        reason = str(exc)
    else:
        _bounded(event)
        return
    assert reason.startswith(("malformed event", "message is not"))


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=200))
def test_decoding_bytes_never_raises_anything_else(raw: bytes) -> None:
    with contextlib.suppress(MessageError):
        decode_event(raw)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.tuples(st.lists(aimed, min_size=1, max_size=6), st.lists(messages, max_size=6)))
async def test_the_coordinator_accounts_for_every_event_and_holds_nothing_back(
    texts: tuple[list[str], list[str]],
) -> None:
    aimed_texts, other_texts = texts
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    await submit(storage, diamond(), "good", clock())
    coord = Coordinator(storage, NAMES, OPTIONS, clock=clock)
    assert (await coord.run_once()).stats.tasks_dispatched == 1  # good is running
    await submit(storage, diamond(), "witness", clock())  # its activate joins the fuzz
    for text in aimed_texts + other_texts:
        await storage.event_queue.send(text)
    first = await asyncio.wait_for(coord.run_once(), timeout=60)
    assert first.stats.events_received == len(aimed_texts) + len(other_texts) + 1
    assert (await load(storage, diamond(), "witness")).status is WorkflowStatus.RUNNING
    # Anything left waits for redelivery (a failed or deferred event); each comes back once per
    # visibility timeout and reaches its bound in at most max_defer_deliveries deliveries.
    for _ in range(OPTIONS.max_defer_deliveries + 1):
        if not storage.event_queue.peek_texts():
            break
        clock.advance(OPTIONS.event_visibility_s + 1)
        await asyncio.wait_for(coord.run_once(), timeout=60)
    assert storage.event_queue.peek_texts() == []
    assert all(letter.reason for letter in await storage.deadletters.list())


async def test_a_witness_is_applied_beside_a_flood_of_bad_events() -> None:
    clock = FakeClock()
    storage = memory_storage("mem", clock=clock)
    for text in ["{", '{"kind":"completed","workflow_id":"w","task":"a","attempt":1e999}'] * 30:
        await storage.event_queue.send(text)
    await submit(storage, diamond(), "witness", clock())
    result = await Coordinator(storage, NAMES, OPTIONS, clock=clock).run_once()
    assert result.stats.dead_lettered == 60
    assert (await load(storage, diamond(), "witness")).status is WorkflowStatus.RUNNING
    assert storage.event_queue.peek_texts() == []
