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

from shared.codec.metadata import status_from_metadata as status_from_metadata
from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.codec.definition import (
        DEFINITION_MAGIC as DEFINITION_MAGIC,
    )
    from shared.codec.definition import (
        DEFINITION_VERSION as DEFINITION_VERSION,
    )
    from shared.codec.definition import (
        decode_definition as decode_definition,
    )
    from shared.codec.definition import (
        encode_definition as encode_definition,
    )
    from shared.codec.state import (
        STATE_MAGIC as STATE_MAGIC,
    )
    from shared.codec.state import (
        STATE_VERSION as STATE_VERSION,
    )
    from shared.codec.state import (
        decode_state as decode_state,
    )
    from shared.codec.state import (
        encode_state as encode_state,
    )
    from shared.codec.state import (
        state_metadata as state_metadata,
    )

__all__, __getattr__ = lazy_face(__name__, __file__)
