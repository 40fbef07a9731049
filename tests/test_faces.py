"""Every package has a face: its ``__init__`` names its public API in ``__all__``, and every name
there resolves (lazy faces included). The faces below are pinned: changing one is an API change,
made here on purpose.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from shared.lazy import face_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(
    ".".join(init.parent.relative_to(ROOT).parts)
    for pattern in ("shared/*/__init__.py", "worker_agent/__init__.py", "dagq/__init__.py")
    for init in ROOT.glob(pattern)
)
"""The packages that must have a face: shared's (each a floor of the house), the worker's and
``dagq``, the face users import.

A subpackage inside one (``shared/definition/passes``) may be a plain folder of modules, but a face
it has must resolve too. devtools is a folder of ``python -m`` tools, not an API."""
SUBPACKAGES = sorted(
    ".".join(init.parent.relative_to(ROOT).parts) for init in ROOT.glob("shared/*/*/__init__.py")
)

PINNED = {
    "shared.api": {
        "CONTEXT",
        "OPENAPI_PATH",
        "AppContext",
        "ControlResult",
        "Submission",
        "bad_request",
        "cancel",
        "compile_definition",
        "get_attempts",
        "get_log",
        "get_task",
        "get_workflow",
        "health",
        "list_workflows",
        "on_event",
        "on_sweep",
        "problem_for",
        "read_task_output",
        "retry",
        "submit",
        "workflow_view",
    },
    "shared.ops": {
        "CHECKS",
        "Facts",
        "diagnose",
        "gather",
        "list_workers",
        "purge_many",
        "purge_workflow",
        "report",
        "summarize",
        "worker_status",
        "worker_view",
    },
    "shared.coordinator": {
        "Coordinator",
        "CoordinatorOptions",
        "Envelope",
        "LeaseState",
        "PartitionSet",
        "PassResult",
        "PassStats",
        "WorkflowUpdater",
    },
    "shared.cli": {"COMMAND_MODULES", "ExitCode", "build_parser", "main"},
    "shared.codec": {
        "DEFINITION_MAGIC",
        "DEFINITION_VERSION",
        "STATE_MAGIC",
        "STATE_VERSION",
        "decode_definition",
        "decode_state",
        "encode_definition",
        "encode_state",
        "state_metadata",
        "status_from_metadata",
    },
    "worker_agent": {"Agent", "WorkerSettings", "main"},
    "dagq": {
        "Accepted",
        "ApiError",
        "ApiUnreachableError",
        "CancelAccepted",
        "Client",
        "CompiledWorkflow",
        "DagqError",
        "DefinitionError",
        "Issue",
        "RetryAccepted",
        "Run",
        "Submitted",
        "Task",
        "TaskDetail",
        "TaskInfo",
        "WaitTimeoutError",
        "Workflow",
        "WorkflowPage",
        "WorkflowState",
        "WorkflowSummary",
        "compile_text",
    },
}


def test_the_faces_cover_every_package() -> None:
    assert set(PINNED) <= set(PACKAGES)
    assert {"shared.api", "shared.definition", "shared.storage", "worker_agent"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES + SUBPACKAGES)
def test_every_name_of_a_face_resolves(package: str) -> None:
    face = importlib.import_module(package)
    names = getattr(face, "__all__", None)
    if package in SUBPACKAGES and names is None:
        return
    assert names, f"{package}/__init__.py names no public API (__all__)"
    assert len(set(names)) == len(names)
    for name in names:
        value = getattr(face, name)  # a lazy face imports its module here
        # a function named after a module of its package is shadowed once that module is imported
        assert not isinstance(value, types.ModuleType), f"{package}.{name} is a module"


@pytest.mark.parametrize("package", sorted(PINNED))
def test_a_pinned_face_names_exactly_its_api(package: str) -> None:
    assert set(importlib.import_module(package).__all__) == PINNED[package]


def _face_source(package: str) -> str:
    return (ROOT / package.replace(".", "/") / "__init__.py").read_text()


LAZY = [p for p in PACKAGES if "lazy_face(" in _face_source(p)]
"""The lazy faces (``shared.lazy.lazy_face``)."""


def test_the_lazy_faces_are_the_heavy_packages() -> None:
    heavy = {"shared.api", "shared.ops", "shared.coordinator", "shared.codec", "shared.definition"}
    assert heavy | {"shared.storage", "shared.readback", "worker_agent"} <= set(LAZY)


@pytest.mark.parametrize("package", LAZY)
def test_a_lazy_face_declares_each_name_once(package: str) -> None:
    """Once: as an import (``name as name``) that type checkers read and ``lazy_face`` reads back
    for ``__all__`` and ``__getattr__``, not again in a list and a map (issue 34)."""
    source = _face_source(package)
    assert "lazy_names(" not in source
    assert "\n__all__ = " not in source
    declared = [name for _, name in face_imports(package, source)]
    assert len(set(declared)) == len(declared), "a name declared twice"
    assert sorted(declared) == importlib.import_module(package).__all__


def test_face_imports_reads_the_top_and_type_checking_imports_only() -> None:
    source = (
        '"""Doc.\n\n    from shared.x.a import in_a_docstring\n"""\n'
        "from shared.x.m import eager as eager\n"
        "from shared.lazy import lazy_face\n"
        "if TYPE_CHECKING:\n"
        "    from shared.x.n import (\n"
        "        one as one,  # a comment\n"
        "        two as two,\n"
        "    )\n"
        "def f() -> None:\n    from shared.x.z import inner\n"
    )
    assert face_imports("shared.x", source) == [
        ("shared.x.m", "eager"),
        ("shared.x.n", "one"),
        ("shared.x.n", "two"),
    ]


def test_an_unknown_name_is_an_attribute_error() -> None:
    face = importlib.import_module("shared.ops")
    with pytest.raises(AttributeError, match=r"'shared\.ops' has no attribute 'nothing_here'"):
        _ = face.nothing_here


def test_lazy_faces_import_nothing_heavy() -> None:
    """Importing a face costs its package nothing: the Functions app imports ``shared.api`` at
    start-up, a coordinator module its package, the worker ``shared.storage``..."""
    code = (
        "import json, sys\n"
        "import shared.api, shared.ops, shared.coordinator, shared.codec, shared.storage\n"
        "import shared.definition, worker_agent\n"
        "heavy = ('pydantic', 'azure', 'yaml', 'shared.engine', 'shared.definition.',\n"
        "    'shared.storage.', 'shared.coordinator.', 'shared.api.', 'shared.ops.',\n"
        "    'worker_agent.')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []


def test_import_dagq_loads_no_server_dependency() -> None:
    """``import dagq`` (the client and the builder) needs only ``pip install 'dagq[cli]'``: it
    loads neither azure-functions nor the Azure Storage SDKs, nor a server package of shared."""
    code = (
        "import json, sys\n"
        "import dagq\n"
        "wf = dagq.Workflow('w'); wf.task('a', cmd='true'); wf.validate()\n"
        "server = ('azure', 'aiohttp', 'shared.storage', 'shared.api', 'shared.coordinator',\n"
        "    'shared.ops', 'shared.engine', 'worker_agent')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(server))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
