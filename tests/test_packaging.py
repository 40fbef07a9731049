"""Reproducible installs: the Functions app deploys from requirements.txt (exactly the runtime
dependencies), and every install — make install, the Functions remote build, worker VMs and images —
uses constraints.txt, the versions the suite passed with; floors exclude known-vulnerable
versions."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent

KNOWN_VULNERABLE = {
    # package: the first version without the advisories below (the floor must be at least this)
    # CVE-2024-23334 (<3.9.2), CVE-2024-52304 (<3.10.11), CVE-2025-53643 (<3.12.14)
    "aiohttp": "3.12.14",
    "azure-identity": "1.16.1",  # CVE-2024-35255 (<1.16.1)
}


def _requirement_lines(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _requirements() -> set[str]:
    return {
        line for line in _requirement_lines(ROOT / "requirements.txt") if not line.startswith("-")
    }


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _project() -> dict:  # type: ignore[type-arg]
    return _pyproject()["project"]


def _constraints() -> dict[str, Version]:
    pins = {}
    for line in _requirement_lines(ROOT / "constraints.txt"):
        name, _, version = line.partition("==")
        assert version, f"constraints.txt: {line!r} is not pinned with =="
        pins[re.sub(r"[-_.]+", "-", name).lower()] = Version(version)
    return pins


def _all_dependencies() -> list[Requirement]:
    project = _project()
    deps = [dep.split("#")[0].strip() for dep in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        deps.extend(extra)
    for group in _pyproject()["dependency-groups"].values():
        deps.extend(dep.split("#")[0].strip() for dep in group)
    return [Requirement(dep) for dep in deps]


def test_requirements_txt_is_the_runtime_dependencies_plus_azure_functions() -> None:
    project = _project()
    runtime = {dep.split("#")[0].strip() for dep in project["dependencies"]}
    functions = set(project["optional-dependencies"]["functions"])
    assert _requirements() == runtime | functions


def test_funcignore_keeps_development_files_out_of_the_deployment() -> None:
    ignored = set((ROOT / ".funcignore").read_text().split())
    dev = ("tests", "infra", "worker_agent", "bench", "sim", "devtools", "node_modules", ".venv")
    for folder in dev:
        assert any(entry.strip("/") == folder for entry in ignored), folder
    assert "constraints.txt" not in ignored  # the remote build reads it beside requirements.txt


def test_every_dependency_is_pinned_to_a_version_its_specifier_allows() -> None:
    pins = _constraints()
    for requirement in _all_dependencies():
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{requirement.name} has no pin in constraints.txt: make constraints"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside {requirement}"
        )


@pytest.mark.parametrize(
    "path",
    ["requirements.txt", "worker_agent/requirements.txt"],
)
def test_requirement_files_install_with_the_constraints(path: str) -> None:
    lines = _requirement_lines(ROOT / path)
    [constraint] = [line for line in lines if line.startswith("-c ")]
    assert (ROOT / path).parent.joinpath(constraint[3:]).resolve() == ROOT / "constraints.txt"


def test_make_install_uses_the_lockfile_and_the_constraints() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "npm ci " in makefile
    assert "npm install" not in makefile
    assert re.search(r"pip install .*-c \$\(CONSTRAINTS\)", makefile)
    assert (ROOT / "package-lock.json").is_file()


def test_worker_images_and_vms_install_with_the_constraints() -> None:
    dockerfile = (ROOT / "infra/aks/worker.Dockerfile").read_text()
    assert "-c /src/constraints.txt" in dockerfile
    cloud_init = (ROOT / "infra/cloud-init/worker.yaml").read_text()
    assert "-c, /etc/dagq/constraints.txt" in cloud_init
    assert (
        "loadTextContent('../../constraints.txt')"
        in (ROOT / "infra/modules/gpu-vmss.bicep").read_text()
    )


def test_floors_exclude_known_vulnerable_versions() -> None:
    files = {
        "pyproject.toml": [str(r) for r in _all_dependencies()],
        "requirements.txt": sorted(_requirements()),
        "worker_agent/requirements.txt": [
            line for line in _requirement_lines(ROOT / "worker_agent/requirements.txt")
            if not line.startswith("-")
        ],
    }  # fmt: skip
    for where, lines in files.items():
        for line in lines:
            requirement = Requirement(line)
            first_safe = KNOWN_VULNERABLE.get(requirement.name.lower())
            if first_safe is None:
                continue
            floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
            assert floors, f"{where}: {line} has no floor"
            assert max(floors) >= Version(first_safe), f"{where}: {line} allows < {first_safe}"
    pins = _constraints()
    for name, first_safe in KNOWN_VULNERABLE.items():
        assert pins[name] >= Version(first_safe)
