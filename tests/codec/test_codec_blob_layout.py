"""State version 6: attempt blobs named per incarnation; a version 5 state keeps the flat layout
(a workflow in flight across the upgrade keeps its logs and outputs)."""

from __future__ import annotations

import base64
import zlib

from shared.codec.metadata import blob_incarnation_from_metadata
from shared.codec.state import decode_state, encode_state, state_metadata
from shared.engine import apply
from shared.engine.commands import Dispatch
from shared.engine.projection import index_row
from shared.engine.transitions import new_state
from shared.messages import ActivateEvent, OutputRef, TaskCompletedEvent
from shared.names import ResourceNames
from tests.engine.history import WF_ID, chain

# Written by dagq at dc43a24 (state version 5): chain(2) of incarnation 7, t0 completed with a
# log and a blob output, t1 failed with a log; every name in the flat layout.
V5_STATE = base64.b64decode(
    "RFFTBXicY2JgYGBhYmSAAod+BzCdgUYDwRwgrlbKTFGyUipP0zVU0lHKzEtWsjLXUUotKsovAgobKpQkFmcrpCVm"
    "5qSmWCmUgNSA5YqVrKqVDIEqUisySxSS81NSFYyVanWU8ktLCkpLwLIGICIpJz8Jarx+iYG+oT5EgV5WcX4e0KzizK"
    "pUJSsjAyCoBeoGGQYz2bi2lgnkE1YOIMkI9Y4AEF8sZBdnQAJgsYvs7ITEOBhQARPYXACDfji2"
)


def test_a_version_5_state_decodes_to_the_flat_layout_and_keeps_it() -> None:
    wf = chain(2)
    st = decode_state(V5_STATE, wf)
    assert (st.incarnation, st.incarnation_blobs, st.blob_incarnation) == (7, False, None)
    assert st.log_blob == {
        0: ResourceNames.log_blob(WF_ID, "t0", 1),
        1: ResourceNames.log_blob(WF_ID, "t1", 1),
    }
    assert st.log_blob[0] == f"{WF_ID}/t0/1/log.txt"  # the layout those workflows wrote
    assert st.outputs[0].blob == ResourceNames.output_blob(WF_ID, "t0", 1)
    # Written again, it stays version 5 byte for byte: its names keep meaning the flat layout.
    assert encode_state(st) == V5_STATE
    assert blob_incarnation_from_metadata(state_metadata(st)) is None


def test_a_new_workflow_names_its_blobs_per_incarnation() -> None:
    wf = chain(2)
    st = new_state(wf, WF_ID, 1000.0, 9)
    assert st.blob_incarnation == 9
    (dispatch,) = apply(wf, st, ActivateEvent(workflow_id=WF_ID), 1001.0)
    assert isinstance(dispatch, Dispatch)
    assert dispatch.blob_incarnation == 9
    log = ResourceNames.log_blob(WF_ID, "t0", 1, 9)
    output = OutputRef(blob=ResourceNames.output_blob(WF_ID, "t0", 1, 9), size=20_000)
    assert log == f"{WF_ID}/9/t0/1/log.txt"
    event = TaskCompletedEvent(
        workflow_id=WF_ID, task="t0", attempt=1, incarnation=9, started_at=1002.0,
        finished_at=1003.0, log_blob=log, output=output,
    )  # fmt: skip
    apply(wf, st, event, 1003.0)
    data = encode_state(st)
    assert data[3] == 8  # t1 in flight: its upstream digest (meta "ups") needs version 8
    assert b"log.txt" not in zlib.decompress(data[4:])  # a flag, not a name
    back = decode_state(data, wf)
    assert (back.incarnation, back.blob_incarnation, back.log_blob) == (9, 9, {0: log})
    assert back.outputs[0] == output
    assert encode_state(back) == data
    assert blob_incarnation_from_metadata(state_metadata(back)) == 9


def test_a_version_5_workflow_dispatches_flat_layout_messages() -> None:
    wf = chain(2)
    st = new_state(wf, WF_ID, 1000.0, 7)
    st.incarnation_blobs = False  # as decoded from version 5
    (dispatch,) = apply(wf, st, ActivateEvent(workflow_id=WF_ID), 1001.0)
    assert isinstance(dispatch, Dispatch)
    assert (dispatch.incarnation, dispatch.blob_incarnation) == (7, None)


def test_a_state_keeps_its_count_of_writes_from_version_7() -> None:
    """The count is the version of the index rows projected from the state (with its run)."""
    wf = chain(2)
    st = new_state(wf, WF_ID, 1000.0, 9)
    assert encode_state(st)[3] == 6  # never written by a coordinator yet: version 6 as before
    st.writes = 3
    data = encode_state(st)
    assert data[3] == 7
    back = decode_state(data, wf)
    assert back.writes == 3
    assert encode_state(back) == data
    assert index_row(wf, back).version == (1, 3)
    legacy = decode_state(V5_STATE, wf)
    legacy.writes = 3  # a version 5 state keeps no count: its rows stay unversioned
    assert encode_state(legacy) == V5_STATE
    assert decode_state(V5_STATE, wf).writes == 0
    assert index_row(wf, legacy).version is None
