"""Fan-out: one written task -> many tasks.

- ``static``: ``foreach`` over parameters (a list of mappings or a matrix), expanded at submit:
  the order, the count and the names of the expansions;
- ``dynamic``: ``foreach_from`` over a parent's output, expanded by the engine when the parent
  completes (``shared.engine.expansion``); what is checked at submit: the reference to the
  parent's list and the ``{{ item }}`` templates.

Both fill their templates through ``shared.definition.templating``.
"""

from __future__ import annotations

from shared.definition.foreach.dynamic import parse_reference, template_problems
from shared.definition.foreach.static import (
    Param,
    Params,
    expand,
    expansion_count,
    expansion_name,
)

__all__ = [
    "Param",
    "Params",
    "expand",
    "expansion_count",
    "expansion_name",
    "parse_reference",
    "template_problems",
]
