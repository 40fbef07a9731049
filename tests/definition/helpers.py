"""Small builders shared by the spec tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.definition.compiler import compile_text
from shared.definition.workflow import CompiledWorkflow
from shared.errors import DefinitionError, Issue


def task(name: str, cmd: str = "true", **fields: Any) -> dict[str, Any]:
    """A task mapping as a user would write it."""
    return {"name": name, "kwargs": {"cmd": cmd}, **fields}


def workflow(*tasks: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": "wf", "tasks": list(tasks), **fields}


def compile_dict(definition: dict[str, Any]) -> CompiledWorkflow:
    return compile_text(json.dumps(definition), fmt="json")


def issues_of(definition: dict[str, Any] | str) -> list[Issue]:
    """Every issue the definition produces (it must be invalid)."""
    text = definition if isinstance(definition, str) else json.dumps(definition)
    with pytest.raises(DefinitionError) as info:
        compile_text(text)
    assert info.value.issues, "a DefinitionError always carries issues"
    return info.value.issues


def one_issue(definition: dict[str, Any] | str, *, location: str, contains: str) -> Issue:
    """Exactly one issue, at ``location``, whose message contains ``contains``."""
    issues = issues_of(definition)
    assert len(issues) == 1, [str(i) for i in issues]
    (issue,) = issues
    assert issue.location == location, str(issue)
    assert contains in issue.message, str(issue)
    return issue
