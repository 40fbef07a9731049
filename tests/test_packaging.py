"""The Functions app deploys from requirements.txt: exactly the runtime dependencies."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _requirements() -> set[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_requirements_txt_is_the_runtime_dependencies_plus_azure_functions() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {dep.split("#")[0].strip() for dep in project["dependencies"]}
    functions = set(project["optional-dependencies"]["functions"])
    host_only = {dep for dep in functions if dep.startswith("croniter")}  # the local host's timer
    assert _requirements() == runtime | (functions - host_only)


def test_funcignore_keeps_development_files_out_of_the_deployment() -> None:
    ignored = set((ROOT / ".funcignore").read_text().split())
    for folder in ("tests", "infra", "worker_agent", "bench", "devtools", "node_modules", ".venv"):
        assert any(entry.strip("/") == folder for entry in ignored), folder
