"""A workflow definition: text -> a validated, expanded ``CompiledWorkflow``.

- ``spec``: the user-facing models (keys, types, ranges); ``parsing``: YAML or JSON text -> them;
- ``compiler``: ``WorkflowSpec`` -> ``CompiledWorkflow`` (``workflow``), every problem at once,
  located, within a bounded amount of work: one ``Compilation`` (``compilation``) through the
  passes of ``passes/`` in the order ``compiler.run_passes`` shows, the collector paused
  (``gc_pause``), "did you mean" hints within a budget (``suggestions``);
- ``conditions/``: the condition language (compiled at submit, evaluated by the engine);
- ``foreach/``: static ``foreach`` expansion and the submit-time checks of ``foreach_from``;
- ``templating/``: ``{{ variable }}`` templates and the shell lexer that keeps them one word;
- ``schema/``: the definition's JSON Schema, generated from ``spec``.

This package never imports the engine, the codecs or storage. Its names load on first use, so
that importing ``shared.definition.workflow`` (the compiled model) costs no parser or compiler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.definition.compiler import compile_text, compile_workflow, parse_definition
    from shared.definition.spec import WorkflowSpec
    from shared.definition.workflow import CompiledWorkflow, TaskDef

__all__ = [
    "CompiledWorkflow",
    "TaskDef",
    "WorkflowSpec",
    "compile_text",
    "compile_workflow",
    "parse_definition",
]

_LAZY = {
    "compile_text": "shared.definition.compiler",
    "compile_workflow": "shared.definition.compiler",
    "parse_definition": "shared.definition.compiler",
    "WorkflowSpec": "shared.definition.spec",
    "CompiledWorkflow": "shared.definition.workflow",
    "TaskDef": "shared.definition.workflow",
}


def __getattr__(name: str) -> Any:
    """The package's names, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
