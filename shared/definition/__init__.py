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

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.definition.compiler import (
        compile_text as compile_text,
    )
    from shared.definition.compiler import (
        compile_workflow as compile_workflow,
    )
    from shared.definition.compiler import (
        parse_definition as parse_definition,
    )
    from shared.definition.spec import WorkflowSpec as WorkflowSpec
    from shared.definition.workflow import CompiledWorkflow as CompiledWorkflow
    from shared.definition.workflow import TaskDef as TaskDef

__all__, __getattr__ = lazy_face(__name__, __file__)
