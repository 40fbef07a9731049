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

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

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

__getattr__ = lazy_names(
    __name__,
    {
        "shared.definition.compiler": ("compile_text", "compile_workflow", "parse_definition"),
        "shared.definition.spec": ("WorkflowSpec",),
        "shared.definition.workflow": ("CompiledWorkflow", "TaskDef"),
    },
)
