"""A workflow read back from storage: its compiled definition (cached once per process) and the
workflow as it runs (definition, ``foreach_from`` expansions and current state), decoded.

A small room above ``shared.storage``: it reads through the storage ports and decodes with the
codecs and the engine, so the ports and their adapters need neither. The API, the coordinator and
the operations read workflows through it.

Every name here is imported on first use (PEP 562, ``shared.lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.readback.workflow_reads import (
        cached_definition as cached_definition,
    )
    from shared.readback.workflow_reads import (
        forget_definition as forget_definition,
    )
    from shared.readback.workflow_reads import (
        read_definition as read_definition,
    )
    from shared.readback.workflow_reads import (
        read_workflow as read_workflow,
    )

__all__, __getattr__ = lazy_face(__name__, __file__)
