"""foreach: fan one written task out over parameters (templates: ``shared.definition.templating``).

- Expansion order: a list of mappings expands in list order; a matrix (parameter -> values) expands
  to the product of its lists in declared order, the last parameter varying fastest
  (``{seed: [1, 2], lr: [0.1, 0.01]}`` -> seed=1/lr=0.1, seed=1/lr=0.01, seed=2/lr=0.1, ...).
- Names: ``{task}.{param}={value}`` for each parameter in order, e.g. ``train.seed=1.lr=0.1``. A
  value that is not a short run of ``A-Z a-z 0-9 _ . -`` is written as ``_`` plus 8 hex digits of
  its SHA-256 instead; a name that would exceed 128 characters becomes ``{task}.{index}``.
- Templates: ``{{ param }}`` in cmd is replaced by the value quoted with ``shlex.quote`` (one shell
  word whatever the value holds; placeholders inside quotes are refused); in env, cwd and queue by
  the raw value (the compiler then validates the result). Every expansion also gets each
  parameter as ``DAGQ_VAR_<param>``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence

from shared.definition.templating import render_value
from shared.names import TASK_NAME_RE

Param = str | int | float | bool
Params = dict[str, Param]

_READABLE_VALUE_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,31}$")
_MAX_NAME = 128


def expansion_count(foreach: Sequence[Mapping[str, Param]] | Mapping[str, Sequence[Param]]) -> int:
    """How many tasks ``foreach`` expands to, without expanding it."""
    if isinstance(foreach, Mapping):
        count = 1
        for values in foreach.values():
            count *= len(values)
        return count
    return len(foreach)


def expand(
    foreach: Sequence[Mapping[str, Param]] | Mapping[str, Sequence[Param]],
) -> Iterator[Params]:
    """The parameter sets of ``foreach``, in expansion order."""
    if isinstance(foreach, Mapping):
        keys = list(foreach)
        for combo in itertools.product(*(foreach[k] for k in keys)):
            yield dict(zip(keys, combo, strict=True))
    else:
        for item in foreach:
            yield dict(item)


def expansion_name(task: str, params: Mapping[str, Param], index: int) -> str:
    """The deterministic, readable name of one expansion (see the module docstring)."""
    segments = [task]
    for key, value in params.items():
        segments.append(f"{key}={_name_value(value)}")
    name = ".".join(segments)
    if len(name) > _MAX_NAME or not TASK_NAME_RE.match(name):
        return f"{task}.{index}"
    return name


def _name_value(value: Param) -> str:
    text = render_value(value)
    if _READABLE_VALUE_RE.match(text) and ".." not in text and not text.endswith("."):
        return text
    return "_" + hashlib.sha256(text.encode()).hexdigest()[:8]
