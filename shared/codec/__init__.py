"""The codecs of a workflow's two blobs, and what their metadata says.

- ``shared.codec.definition``: the definition blob (``{id}.def``, written once at submit);
- ``shared.codec.state``: the state blob (``{id}.state``, rewritten by the coordinator);
- ``shared.codec.framing``: the magic, version byte and compression both blobs share;
- ``shared.codec.metadata``: the state blob's metadata (status), for readers that decode nothing.

Only the metadata part is imported with the package: the worker reads a workflow's status through
it without loading the engine. The blob codecs load on first use of their names here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from shared.codec.metadata import status_from_metadata

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

_LAZY = {
    "DEFINITION_MAGIC": "shared.codec.definition",
    "DEFINITION_VERSION": "shared.codec.definition",
    "decode_definition": "shared.codec.definition",
    "encode_definition": "shared.codec.definition",
    "STATE_MAGIC": "shared.codec.state",
    "STATE_VERSION": "shared.codec.state",
    "decode_state": "shared.codec.state",
    "encode_state": "shared.codec.state",
    "state_metadata": "shared.codec.state",
}


def __getattr__(name: str) -> Any:
    """The blob codecs' names, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
