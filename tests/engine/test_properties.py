"""Property-based tests: random DAGs driven by random event orders — with duplicates, stale
attempts, sweeps, cancels, reruns and crash-and-replay (restore the last flushed encoding, replay
the unflushed events in any order) — against the engine's invariants."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as hs

from shared.codec.state import encode_state
from shared.definition.workflow import CompiledWorkflow
from shared.engine import apply, new_state
from shared.messages import (
    ActivateEvent,
    CancelEvent,
    RetryEvent,
    TaskCompletedEvent,
)
from tests.engine.worlds import OUTCOMES, WF, World, dags


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(wf=dags(), data=hs.data())
def test_random_histories_keep_the_invariants(wf: CompiledWorkflow, data: hs.DataObject) -> None:
    world = World(wf, new_state(wf, WF, 1000.0))
    world.flush()
    world.apply(ActivateEvent(workflow_id=WF))
    for _ in range(data.draw(hs.integers(0, 40), label="steps")):
        action = data.draw(
            hs.sampled_from(
                ["report"] * 6
                + ["duplicate", "stale", "sweep", "flush", "crash", "cancel", "rerun"]
            ),
            label="action",
        )
        if action == "report" and world.outstanding:
            key = data.draw(hs.sampled_from(sorted(world.outstanding)), label="attempt")
            world.report(key, data.draw(hs.sampled_from(OUTCOMES), label="outcome"))
        elif action == "duplicate" and world.history:
            world.apply(data.draw(hs.sampled_from(world.history), label="dup"), record=False)
        elif action == "stale":
            touched = [i for i in range(len(wf.tasks)) if world.st.attempt[i] > 1]
            if touched:
                i = data.draw(hs.sampled_from(touched), label="stale task")
                before = encode_state(world.st)
                event = TaskCompletedEvent(
                    workflow_id=WF, task=wf.tasks[i].name, attempt=world.st.attempt[i] - 1,
                    started_at=world.now, finished_at=world.now,
                )  # fmt: skip
                assert apply(wf, world.st, event, world.now + 1) == []
                assert encode_state(world.st) == before
        elif action == "sweep":
            world.sweep(data.draw(hs.sampled_from([1.0, 60.0, 200.0, 1000.0]), label="advance"))
        elif action == "flush":
            world.flush()
        elif action == "crash" and world.unflushed:
            order = data.draw(hs.permutations(range(len(world.unflushed))), label="replay order")
            world.crash_and_replay(order)
        elif action == "cancel":
            world.apply(CancelEvent(workflow_id=WF))
        elif action == "rerun" and world.st.status.is_terminal:
            world.flush()  # the API reads the finished state from the blob
            world.apply(RetryEvent(workflow_id=WF, run=world.st.run))

    # Every dispatched attempt eventually reports: the workflow ends, and the counts add up.
    for _ in range(10_000):
        if not world.outstanding:
            break
        key = data.draw(hs.sampled_from(sorted(world.outstanding)), label="drain attempt")
        world.report(key, data.draw(hs.sampled_from(OUTCOMES[:-1]), label="drain outcome"))
    assert not world.deferred
    assert world.st.status.is_terminal, world.st.counts()
    assert world.st.all_terminal
    assert sum(world.st.counts().values()) == len(world.running.tasks)
    assert world.finishes >= 1
