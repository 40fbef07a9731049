"""Checking a ``foreach_from`` task at submit: its list reference and its templates.

``foreach_from: inputs.<parent>.<field path>`` names a direct dependency and a path of keys (or list
indexes) into that dependency's JSON output; the task then expands to one task per item when the
parent completes (``shared.engine.expansion``). Its ``cmd`` and ``env`` may use ``{{ item }}`` and
``{{ item.<key> }}`` (filled in the same shell-safe way as static foreach:
``shared.definition.templating``), and ``{{ params.<NAME> }}`` (the engine fills them too; the
foreach_from pass checks that each names a declared parameter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from shared.definition.templating import PARAMS_PREFIX, Template

PREFIX = "inputs."
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_ITEM_RE = re.compile(r"^item(\.[A-Za-z_][A-Za-z0-9_]*)?$")
FORM = "inputs.<parent>.<field path>"


def parse_reference(
    ref: str, parents: Sequence[str], hint: Callable[[str], str] = lambda name: ""
) -> tuple[str, tuple[str, ...]] | str:
    """(parent name, path) of a ``foreach_from`` reference, or what is wrong with it.

    The parent is the longest direct dependency the reference starts with (task names may hold
    dots); the rest is the path, one key or list index per dot-separated segment. ``hint(name)``
    adds a "did you mean" for a name that is not a dependency."""
    if not ref.startswith(PREFIX):
        return f"foreach_from must read a dependency's output as {FORM}, got {ref!r}"
    rest = ref[len(PREFIX) :]
    parent = max(
        (p for p in parents if rest == p or rest.startswith(p + ".")), key=len, default=None
    )
    if parent is None:
        named = rest.split(".", 1)[0] or rest
        listed = ", ".join(parents) if parents else "none"
        return (
            f"foreach_from reads {named!r}, which is not a direct dependency of this task"
            f" (depends_on: {listed}){hint(named)}: add it to depends_on"
        )
    path = tuple(rest[len(parent) + 1 :].split(".")) if rest != parent else ()
    for segment in path:
        if not _SEGMENT_RE.match(segment):
            return (
                f"foreach_from path {ref!r} cannot lead to a list: {segment!r} is not a key"
                " (letters, digits, '_', '-') or a list index"
            )
    return parent, path


def template_problems(cmd: Template, env: dict[str, Template]) -> list[tuple[str, str]]:
    """(field, problem) for each placeholder that is not ``{{ item }}`` / ``{{ item.<key> }}``."""
    found: list[tuple[str, str]] = []
    for field, template in (("cmd", cmd), *((f"env.{k}", t) for k, t in env.items())):
        for name in template.variables:
            if not _ITEM_RE.match(name) and not name.startswith(PARAMS_PREFIX):
                found.append(
                    (
                        field,
                        f"unknown template variable {{{{ {name} }}}}: a foreach_from task has"
                        " {{ item }}, {{ item.<key> }} and {{ params.<NAME> }}",
                    )
                )
    return found
