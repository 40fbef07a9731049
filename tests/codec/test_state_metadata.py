"""The state blob's metadata: what the codec writes, the codec reads back (workers read the status
from it, with one HEAD, to notice a cancelled workflow)."""

from __future__ import annotations

import pytest

from shared.codec.metadata import status_from_metadata
from shared.codec.state import state_metadata
from shared.engine import new_state
from shared.states import WorkflowStatus
from tests.engine.history import task, workflow


@pytest.mark.parametrize("status", list(WorkflowStatus))
def test_the_status_written_is_the_status_read(status: WorkflowStatus) -> None:
    state = new_state(workflow(task("a")), "wf-1", 1000.0)
    state.status = status
    metadata = state_metadata(state)
    assert status_from_metadata(metadata) is status
    # The blob service may hand metadata names (and we tolerate values) back in another case.
    shouted = {key.upper(): value.upper() for key, value in metadata.items()}
    assert status_from_metadata(shouted) is status


@pytest.mark.parametrize("metadata", [{}, {"status": "paused"}, {"run": "1"}])
def test_no_known_status_is_none(metadata: dict[str, str]) -> None:
    assert status_from_metadata(metadata) is None
