"""What a state blob's metadata says, readable without the codec or the engine.

Workers HEAD a state blob to notice that its workflow was cancelled, and bulk purge judges a
workflow by its state blob's metadata: both read it here, importing nothing heavier than the
status enum. The coordinator writes these keys (``shared.codec.state.state_metadata``).
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.states import WorkflowStatus

STATUS_KEY = "status"
"""The workflow's status (a ``WorkflowStatus`` value)."""

RUN_KEY = "run"
"""The workflow's run number (grows with every retry or rerun)."""

CODEC_KEY = "codec"
"""The version of the state blob's codec that wrote it."""

INCARNATION_KEY = "incarnation"
"""Which workflow of its id the state is (absent: written before incarnations existed)."""

CREATED_KEY = "created"
"""The workflow's creation time in integer milliseconds (absent: written before it was kept):
index-repair tells by it a row of an earlier workflow of the id."""


def incarnation_from_metadata(metadata: Mapping[str, str]) -> int | None:
    """The incarnation ``state_metadata`` recorded (None when absent or not a number: a state
    from before incarnations, whose messages carry none either)."""
    return _number(metadata, INCARNATION_KEY)


BLOBS_PER_INCARNATION_SINCE = 6
"""The first state codec version whose workflows name their attempt blobs per incarnation
(``shared.names.ResourceNames.attempt_prefix``)."""


def blob_incarnation_from_metadata(metadata: Mapping[str, str]) -> int | None:
    """The incarnation that names the workflow's attempt blobs: its incarnation when the state
    was written by codec version 6 or later, else None (the flat layout)."""
    codec = _number(metadata, CODEC_KEY)
    if codec is None or codec < BLOBS_PER_INCARNATION_SINCE:
        return None
    return incarnation_from_metadata(metadata)


def run_from_metadata(metadata: Mapping[str, str]) -> int | None:
    """The run number ``state_metadata`` recorded (None when absent or not a number)."""
    return _number(metadata, RUN_KEY)


def _number(metadata: Mapping[str, str], key: str) -> int | None:
    """The value of ``key`` (in any case) as a number, or None when absent or not a number."""
    value = next((v for k, v in metadata.items() if k.lower() == key), None)
    if value is None or not value.isascii() or not value.isdigit() or len(value) >= 12:
        return None
    return int(value)


def created_ms_from_metadata(metadata: Mapping[str, str]) -> int | None:
    """The creation time (integer milliseconds) ``state_metadata`` recorded, or None."""
    value = next((v for k, v in metadata.items() if k.lower() == CREATED_KEY), None)
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 16:
        return None
    return int(value)


def status_from_metadata(metadata: Mapping[str, str]) -> WorkflowStatus | None:
    """The workflow status that ``state_metadata`` recorded; None when there is none this dagq
    knows. Keys match in any case (the blob service does not keep the case of metadata names)."""
    value = next((v for k, v in metadata.items() if k.lower() == STATUS_KEY), None)
    try:
        return None if value is None else WorkflowStatus(value.lower())
    except ValueError:
        return None
