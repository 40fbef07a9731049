"""The codecs of a workflow's two blobs, and what their metadata says.

- ``shared.codec.definition``: the definition blob (``{id}.def``, written once at submit);
- ``shared.codec.state``: the state blob (``{id}.state``, rewritten by the coordinator);
- ``shared.codec.framing``: the magic, version byte and compression both blobs share;
- ``shared.codec.metadata``: the state blob's metadata (status), for readers that decode nothing.

Only the metadata part is imported with the package: the worker reads a workflow's status through
it without loading the engine. The blob codecs load on first use of their names here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.codec.metadata import status_from_metadata
from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.codec.definition import (
        DEFINITION_MAGIC,
        DEFINITION_VERSION,
        decode_definition,
        encode_definition,
    )
    from shared.codec.state import (
        STATE_MAGIC,
        STATE_VERSION,
        decode_state,
        encode_state,
        state_metadata,
    )

__all__ = [
    "DEFINITION_MAGIC",
    "DEFINITION_VERSION",
    "STATE_MAGIC",
    "STATE_VERSION",
    "decode_definition",
    "decode_state",
    "encode_definition",
    "encode_state",
    "state_metadata",
    "status_from_metadata",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.codec.definition": (
            "DEFINITION_MAGIC",
            "DEFINITION_VERSION",
            "decode_definition",
            "encode_definition",
        ),
        "shared.codec.state": (
            "STATE_MAGIC",
            "STATE_VERSION",
            "decode_state",
            "encode_state",
            "state_metadata",
        ),
    },
)
