"""Definition text (YAML or JSON) -> ``WorkflowSpec``, reporting every problem at once.

Untrusted input: ``yaml.SafeLoader`` only (plus duplicate-key and alias-bomb checks), JSON without
NaN/Infinity, a size limit before anything is parsed, and pydantic errors turned into issues that
name the task and the field ("did you mean" for misspelt keys).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from shared.definition.spec import (
    CacheSpec,
    RetrySpec,
    TaskKwargs,
    TaskSpec,
    WorkflowSpec,
    type_word,
)
from shared.definition.suggestions import Suggester
from shared.errors import DefinitionError, Issue
from shared.limits import MAX_DEFINITION_BYTES, MAX_YAML_NODES
from shared.names import safe_name_problem

Format = Literal["yaml", "json"]


@dataclass(frozen=True)
class PartialSpec:
    """What can still be checked of a definition whose shape is wrong in places: the tasks that
    did parse, where they were written, and the names of those that did not."""

    spec: WorkflowSpec
    positions: list[int]
    """Index in the written ``tasks`` list of each task of ``spec.tasks``."""
    unparsed: frozenset[str]
    """Names of tasks left out for shape problems (depending on them is not an unknown name)."""


def parse_definition(
    data: str | bytes, *, source: str = "<input>", fmt: Format | None = None
) -> WorkflowSpec:
    """Parse YAML or JSON text (``fmt=None``: JSON if it starts with ``{``) into a WorkflowSpec.

    Raises DefinitionError listing every problem: bad UTF-8, syntax errors (with line and column),
    a top level that is not a mapping, unknown keys, wrong types or values.
    """
    spec, error, _partial = parse_for_validation(data, source=source, fmt=fmt)
    if error is not None:
        raise error
    assert spec is not None
    return spec


def parse_for_validation(
    data: str | bytes, *, source: str = "<input>", fmt: Format | None = None
) -> tuple[WorkflowSpec | None, DefinitionError | None, PartialSpec | None]:
    """Like ``parse_definition``, but instead of raising it returns the shape error together with
    the part of the definition that can still be checked (the well-formed tasks, when the
    workflow-level fields are fine), so a validator can report every problem at once.

    Text that cannot be read at all (size, encoding, syntax) still raises DefinitionError.
    """
    text = _decode(data, source)
    raw = _load(text, source, fmt)
    if not isinstance(raw, dict):
        raise DefinitionError(
            [
                Issue(
                    "(top level)",
                    "a workflow definition is a mapping with 'name' and 'tasks', got"
                    f" {type_word(raw)}",
                )
            ],
            source,
        )
    try:
        return WorkflowSpec.model_validate(raw), None, None
    except ValidationError as exc:
        error = DefinitionError(_shape_issues(exc, raw), source)
    return None, error, _partial(raw)


def _partial(raw: dict[str, Any]) -> PartialSpec | None:
    """The well-formed tasks of a definition with shape problems (None if the problems are in the
    workflow-level fields, or nothing parsed)."""
    tasks = raw.get("tasks")
    if not isinstance(tasks, list):
        return None
    kept: list[Any] = []
    positions: list[int] = []
    unparsed: set[str] = set()
    for i, task in enumerate(tasks):
        try:
            TaskSpec.model_validate(task)
        except ValidationError:
            name = task.get("name") if isinstance(task, dict) else None
            if isinstance(name, str):
                unparsed.add(name)
            continue
        kept.append(task)
        positions.append(i)
    if not kept:
        return None
    try:
        spec = WorkflowSpec.model_validate({**raw, "tasks": kept})
    except ValidationError:
        return None
    return PartialSpec(spec, positions, frozenset(unparsed))


def _decode(data: str | bytes, source: str) -> str:
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_DEFINITION_BYTES:
        raise DefinitionError(
            [
                Issue(
                    "(file)",
                    f"the definition is {size:,} bytes; the limit is {MAX_DEFINITION_BYTES:,}"
                    " (use foreach instead of writing out many similar tasks)",
                )
            ],
            source,
        )
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DefinitionError(
            [Issue(f"line {line}", f"not valid UTF-8 (byte {exc.start}): save the file as UTF-8")],
            source,
        ) from None


def _load(text: str, source: str, fmt: Format | None) -> Any:
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "yaml"
    if fmt == "json":
        try:
            return json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant)
        except json.JSONDecodeError as exc:
            raise DefinitionError(
                [Issue(f"line {exc.lineno}, column {exc.colno}", f"JSON syntax error: {exc.msg}")],
                source,
            ) from None
        except _DuplicateKeyError as exc:
            raise DefinitionError([Issue("(json)", str(exc))], source) from None
        except RecursionError:
            raise DefinitionError([Issue("(json)", "JSON nested too deeply")], source) from None
    return _load_yaml(text, source)


class _DuplicateKeyError(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"key {key!r} appears twice in the same object")
        out[key] = value
    return out


def _json_constant(name: str) -> Any:
    raise _DuplicateKeyError(f"{name} is not valid JSON (use a finite number)")


# libyaml's parser is ~10x faster than the pure-Python one; the constructor (which builds only
# plain types) is the same safe one either way.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """SafeLoader that rejects duplicate keys (YAML would silently keep the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable keys: SafeLoader reports them itself
            if duplicate:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in the same mapping", mark
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _load_yaml(text: str, source: str) -> Any:
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise DefinitionError(
                [
                    Issue(
                        "(yaml)",
                        f"the document expands to more than {MAX_YAML_NODES:,} nodes through"
                        " aliases",
                    )
                ],
                source,
            )
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise DefinitionError([Issue(where, f"YAML error: {what}")], source) from None
    except yaml.YAMLError as exc:
        raise DefinitionError([Issue("(yaml)", f"YAML error: {exc}")], source) from None
    except RecursionError:
        raise DefinitionError([Issue("(yaml)", "YAML nested too deeply")], source) from None
    finally:
        loader.dispose()


def _expanded_size(root: yaml.Node) -> int:
    """Node count with aliases expanded, computed in linear time over the distinct nodes."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        if children_done:
            sizes[id(node)] = min(1 + sum(sizes[id(k)] for k in kids), MAX_YAML_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)]


# -- pydantic errors -> issues ------------------------------------------------------------------

_MODEL_AT: dict[tuple[str, ...], type[Any]] = {
    (): WorkflowSpec,
    ("tasks", "*"): TaskSpec,
    ("tasks", "*", "kwargs"): TaskKwargs,
    ("tasks", "*", "retry"): RetrySpec,
    ("tasks", "*", "cache"): CacheSpec,
}
_KEYS_AT: dict[tuple[str, ...], list[str]] = {
    path: list(model.model_fields) for path, model in _MODEL_AT.items()
}


def _shape_issues(exc: ValidationError, raw: dict[str, Any]) -> list[Issue]:
    issues: list[Issue] = []
    suggester = Suggester()
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if _other_cache_member(loc):
            continue
        loc = tuple(part for part in loc if part != "CacheSpec")  # the union member's tag
        location, task = _render_loc(loc, raw)
        issues.append(Issue(location, _error_message(error, loc, suggester), task))
    return issues


def _other_cache_member(loc: tuple[Any, ...]) -> bool:
    """An error of ``cache: bool | CacheSpec``'s boolean member on a mapping: the mapping's own
    errors (unknown key, bad type) say what is wrong; "expected a boolean" would only confuse."""
    return len(loc) >= 4 and loc[0] == "tasks" and loc[2:4] == ("cache", "bool")


def _render_loc(loc: tuple[Any, ...], raw: dict[str, Any]) -> tuple[str, str | None]:
    """``('tasks', 3, 'kwargs', 'cmd')`` -> ``tasks.train.kwargs.cmd`` once the name is known."""
    parts: list[str] = []
    task: str | None = None
    for i, part in enumerate(loc):
        if isinstance(part, int):
            if i == 1 and loc[0] == "tasks":
                name = _task_name_at(raw, part)
                if name is not None:
                    task = name
                    parts.append(f".{name}")
                    continue
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    return ("".join(parts) or "(top level)"), task


def _task_name_at(raw: dict[str, Any], index: int) -> str | None:
    tasks = raw.get("tasks")
    if isinstance(tasks, list) and index < len(tasks) and isinstance(tasks[index], dict):
        name = tasks[index].get("name")
        if isinstance(name, str) and name and safe_name_problem(name) is None:
            return name
    return None


def _error_message(error: Any, loc: tuple[Any, ...], suggester: Suggester) -> str:
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        known = _KEYS_AT.get(tuple("*" if isinstance(p, int) else p for p in loc[:-1]), [])
        hint = suggester.hint(key, known)
        allowed = f" (allowed here: {', '.join(known)})" if known and not hint else ""
        return f"unknown key {key!r}{hint}{allowed}"
    if kind == "missing":
        return f"required key {str(loc[-1])!r} is missing"
    if kind in ("value_error", "assertion_error"):
        return str(error["msg"]).removeprefix("Value error, ")
    if kind.endswith("_type") or kind in ("literal_error", "enum"):
        expected = _A_VALID_RE.sub(_article, str(error["msg"]).removeprefix("Input should be "))
        if kind in ("model_type", "dict_type"):
            expected = "a mapping"  # not pydantic's "dictionary or instance of TaskSpec"
        hint = ""
        if kind == "string_type" and isinstance(given, int | float | bool):
            hint = " (quote it in YAML)"
        elif loc[-1:] == ("kwargs",) and isinstance(given, str):
            hint = " (write kwargs: {cmd: ...})"
        got = f"{type_word(given)} {_short(given)}".rstrip()
        return f"expected {expected}, got {got}{hint}"
    message = str(error["msg"]).replace("Input should be", "must be")
    return f"{message}, got {_short(given)}" if _short(given) else message


_A_VALID_RE = re.compile(r"\ba valid (\w)")


def _article(match: re.Match[str]) -> str:
    letter = match.group(1)
    return ("an " if letter in "aeiou" else "a ") + letter


def _short(value: Any) -> str:
    if value is None or isinstance(value, dict | list):
        return ""
    text = json.dumps(value) if isinstance(value, str | int | float | bool) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
