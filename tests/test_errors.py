"""The error hierarchy: one base class, a docstring on every error, one HTTP mapping. Errors live in
shared/errors.py, but for those only one room raises and catches: in that room's errors.py."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import shared.client.errors
import shared.errors as errors
import shared.notify.errors
import worker_agent.errors
from shared.api.problems import problem_for
from shared.errors import DagqError

ROOT = Path(__file__).resolve().parents[1]
ERROR_MODULES = (errors, shared.client.errors, shared.notify.errors, worker_agent.errors)
"""The kernel's errors, and the client's, the notifications' and the worker's (room-only errors,
in their rooms)."""


def _error_classes() -> list[type[DagqError]]:
    return [
        value
        for module in ERROR_MODULES
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, DagqError)
        and value.__module__ == module.__name__
    ]


def test_every_error_has_a_docstring_of_its_own() -> None:
    # A class's __doc__ is not inherited: None means this class has none.
    assert [cls.__name__ for cls in _error_classes() if not cls.__doc__] == []


def test_exception_classes_are_defined_only_in_the_error_modules() -> None:
    homes = {ROOT / (module.__name__.replace(".", "/") + ".py") for module in ERROR_MODULES}
    strays = []
    for package in ("shared", "worker_agent"):
        for path in (ROOT / package).rglob("*.py"):
            if path in homes:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                    continue
                bases = {ast.unparse(base) for base in node.bases}
                if any(base.endswith(("Error", "Exception")) for base in bases):
                    strays.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert strays == []


def test_room_errors_stand_on_the_kernels_base_class() -> None:
    rooms = [cls for cls in _error_classes() if cls.__module__ != errors.__name__]
    client = {"ApiError", "ApiUnreachableError", "WaitTimeoutError"}
    assert {cls.__name__ for cls in rooms} == client | {
        "RefusedTarget",
        "AttemptError",
        "StartError",
    }
    assert all(issubclass(cls, DagqError) and cls.http_status is None for cls in rooms)


INTERNAL = [c for c in _error_classes() if c.http_status is None and "__init__" not in vars(c)]


@pytest.mark.parametrize("cls", INTERNAL, ids=lambda cls: cls.__name__)
def test_an_error_without_a_status_is_a_hidden_500(cls: type[DagqError]) -> None:
    problem = problem_for(cls("secret detail"))
    assert (problem.status, problem.slug) == (500, "internal-error")
    assert "secret" not in problem.detail


def test_api_facing_errors_carry_their_status_and_type() -> None:
    statuses = {
        cls.__name__: (cls.http_status, cls.problem_type)
        for cls in _error_classes()
        if cls.http_status is not None
    }
    assert statuses == {
        "DefinitionError": (400, "invalid-definition"),
        "CodecError": (500, "corrupt-data"),
        "ConfigError": (503, "misconfigured"),
        "GpuDetectionError": (503, "misconfigured"),
        "InvalidIdError": (400, "invalid-name"),
        "InvalidContinuationError": (400, "invalid-continuation"),
        "NotFoundError": (404, "not-found"),
        "ConflictError": (409, "conflict"),
        "IncompleteSubmitError": (503, "incomplete-submit"),
    }
    incomplete = problem_for(errors.IncompleteSubmitError("w1", OSError("boom")))
    assert incomplete.members == {"id": "w1"}
    assert "?id=w1" in incomplete.detail
