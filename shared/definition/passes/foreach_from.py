"""Checks of ``foreach_from`` tasks: the reference to one plain parent's output, and templates
of ``{{ item }}`` / ``{{ item.<key> }}`` in cmd and env only (see
``shared.definition.foreach.dynamic``)."""

from __future__ import annotations

from shared.definition.compilation import CompilerState, Written
from shared.definition.foreach.dynamic import parse_reference, template_problems
from shared.definition.templating import Template, parse_command, parse_template
from shared.definition.workflow import ExpandFrom
from shared.errors import TemplateSyntaxError


class ForeachFromChecks(CompilerState):
    """Resolves each ``foreach_from`` into the ``ExpandFrom`` its tasks carry."""

    # -- foreach_from ------------------------------------------------------------------------
    def check_dynamic(self) -> None:
        """Resolve each ``foreach_from``: a direct dependency that is one plain task, a path, and
        templates of ``{{ item }}`` / ``{{ item.<key> }}`` only (see
        ``shared.definition.foreach.dynamic``)."""
        for w in self.written:
            task = w.spec
            if task.foreach_from is None:
                continue
            loc, add = f"{w.loc}.foreach_from", self.issues.add
            if task.foreach is not None:
                add(loc, "a task has either foreach or foreach_from, not both", task.name)
                continue
            self.check_dynamic_templates(w)
            found = parse_reference(task.foreach_from, task.depends_on)
            if isinstance(found, str):
                add(loc, found, task.name)
                continue
            parent, path = found
            source = self.number_of.get(parent)
            theirs = next((o for o in self.written if o.spec.name == parent), None)
            if theirs is not None and theirs.spec.foreach is not None:
                add(loc, f"{parent!r} is a foreach of several tasks: name one task", task.name)
                continue
            if theirs is not None and theirs.spec.foreach_from is not None:
                add(loc, f"{parent!r} is a foreach_from task: it has no output", task.name)
                continue
            if source is None:
                continue  # an unknown dependency: reported already
            w.dynamic = ExpandFrom(source, path, self.max_expansion_width)

    def check_dynamic_templates(self, w: Written) -> None:
        kwargs, loc = w.spec.kwargs, f"{w.loc}.kwargs"
        field = "cmd"
        try:
            cmd = parse_command(kwargs.cmd)
            env: dict[str, Template] = {}
            for key, value in kwargs.env.items():
                field = f"env.{key}"
                env[key] = parse_template(value)
        except TemplateSyntaxError as exc:
            self.issues.add(f"{loc}.{field}", str(exc), w.spec.name)
            return
        for field, problem in template_problems(cmd, env):
            self.issues.add(f"{loc}.{field}", problem, w.spec.name)
        for field, text in (("kwargs.cwd", kwargs.cwd), ("queue", w.spec.queue)):
            if text is not None and "{{" in text:
                self.issues.add(
                    f"{w.loc}.{field}",
                    "a foreach_from task cannot template its cwd or queue (only cmd and env)",
                    w.spec.name,
                )
