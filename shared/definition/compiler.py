"""Definition text -> validated, expanded ``CompiledWorkflow``, reporting every problem at once.

``compile_text`` parses (``shared.definition.parsing``: UTF-8, YAML/JSON syntax, keys, types)
and compiles; ``compile_workflow`` compiles a ``WorkflowSpec``. Both raise
``shared.errors.DefinitionError`` with every issue found, each located (task and field).

Compiling is one ``Compilation`` (``shared.definition.compilation``) handed to each pass of
``shared.definition.passes`` in the order ``run_passes`` shows:

    values -> params -> expansion -> budgets -> dependencies -> foreach_from -> acyclic
        -> cache -> notify -> build

A pass reports what it finds and lets the next ones run, so one submit sees every problem; only
the budgets pass ends the compilation early. Every pass is linear in the size of the definition
(the API runs this on each submit), and the cyclic garbage collector is paused meanwhile
(``shared.definition.gc_pause``).

To add a check: put it in the pass whose fields it reads (or a new module under ``passes/``,
called from ``run_passes`` after the passes that fill what it needs), report with
``c.issues.add(location, message, task)``, and keep its cost bounded per task.
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.definition.compilation import Compilation, Options
from shared.definition.gc_pause import paused_gc
from shared.definition.parsing import Format, parse_definition, parse_for_validation
from shared.definition.passes import (
    acyclic,
    budgets,
    build,
    cache,
    dependencies,
    expansion,
    foreach_from,
    notify,
    params,
    values,
)
from shared.definition.spec import WorkflowSpec
from shared.definition.workflow import CompiledWorkflow
from shared.errors import DefinitionError
from shared.limits import MAX_EXPANSIONS

__all__ = ["compile_text", "compile_workflow", "parse_definition", "run_passes"]


def run_passes(c: Compilation) -> CompiledWorkflow:
    """The compiler: each pass in order over one compilation (see the module's docstring)."""
    values.check_workflow_fields(c)  # name, default_queue, workflow env, some tasks
    params.resolve_params(c)  # declared + given -> values; the workflow env filled
    expansion.expand_tasks(c)  # names, foreach -> final tasks, each task's values checked
    budgets.check_budgets(c)  # too many tasks or bytes: stop here
    dependencies.resolve_dependencies(c)  # depends_on -> deps, dep_policy, conditions
    foreach_from.resolve_foreach_from(c)  # the parent's output and {{ item }} templates
    acyclic.check_acyclic(c)  # no dependency cycle
    cache.check_cache(c)  # cache: version and ttl
    notify.check_notify(c)  # notify: webhook URLs and events
    return build.build_workflow(c)  # every issue, or the CompiledWorkflow


def compile_workflow(
    spec: WorkflowSpec,
    *,
    source_text: str | None = None,
    max_expansion_width: int = MAX_EXPANSIONS,
    params: Mapping[str, str] | None = None,
) -> CompiledWorkflow:
    """Expand foreach, merge env, resolve defaults and validate the graph; ``params`` are the
    parameter values given at submit, as text.

    Raises DefinitionError with every issue found.
    """
    options = Options(
        source_text=source_text, max_expansion_width=max_expansion_width, params=params
    )
    with paused_gc():
        return run_passes(Compilation(spec, options))


def compile_text(
    data: str | bytes,
    *,
    source: str = "<input>",
    fmt: Format | None = None,
    max_expansion_width: int = MAX_EXPANSIONS,
    params: Mapping[str, str] | None = None,
    require_params: bool = True,
) -> CompiledWorkflow:
    """Parse and compile in one step (what the API and ``dagq validate`` do), with the parameter
    values given at submit (``params``, as text); ``require_params=False`` lets a required
    parameter go without a value (checking a definition alone)."""
    with paused_gc():
        spec, shape_error, partial = parse_for_validation(data, source=source, fmt=fmt)
        if shape_error is not None:
            # Check what parsed too, so one run reports every problem (shape and graph).
            if partial is not None:
                c = Compilation(
                    partial.spec,
                    Options(source=source, params=params, require_params=require_params),
                    partial.positions,
                    partial.unparsed,
                )
                try:
                    run_passes(c)
                except DefinitionError as graph_error:
                    shape_error.issues += graph_error.issues
                    raise DefinitionError(shape_error.issues, source) from None
            raise shape_error
        assert spec is not None
        text = data if isinstance(data, str) else data.decode("utf-8-sig")
        options = Options(source, text, max_expansion_width, params, require_params)
        return run_passes(Compilation(spec, options))
