"""The field's own tools over infra/, offline: ``make infra-check`` (CI: after ``make lint``).

- **checkov** (``--framework bicep``) over every template: a failed check fails, unless the resource
  skips it inline with its reason (``// checkov:skip=CKV_AZURE_NN: why``). checkov's Bicep parser
  does not know ``fail()`` and would skip a file that uses it ("parsing error"), so it reads a copy
  of infra/ in which ``fail(`` reads ``string(``; nothing else changes, and a parsing error fails.
- **kubernetes-validate** (strict) over the AKS manifests as ``envsubst`` renders them, plus the
  Job template inside the KEDA ScaledJob (KEDA's own kinds have no schema there: tests/infra/
  test_aks.py checks them).
- **cloud-init schema** over the GPU VMs' user-data as ARM renders it (driver on and off).

The first-boot sandbox (tests/infra/test_provisioning.py) runs with the test suite.
"""

from __future__ import annotations

import argparse
import json
import shutil
import string
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.infra import rendering
from tests.infra.bicep_model import INFRA

KUBERNETES_VERSION = "1.31"
"""The oldest Kubernetes minor version AKS supports as we write (manifests must work there)."""

# What `envsubst` fills in (infra/README.md, "Workers on AKS"); tests/infra/test_aks.py checks
# that these are exactly the variables the manifests use.
AKS_VALUES = {
    "DAGQ_PREFIX": "dagq",
    "DAGQ_STORAGE_ACCOUNT": "stabcdefghijklm",
    "WORKER_CLIENT_ID": "00000000-0000-0000-0000-000000000001",
    "DAGQ_VERIFY_KEYS": "pg4wQWwHXpSz9CI6KdrjDb5wwDtD7aEpPCjFnkMQ8Tw=",
    "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=0;IngestionEndpoint=https://x/",
    "WORKER_IMAGE": "example.azurecr.io/dagq-worker:1",
}


class CheckFailed(Exception):
    """One of the offline checks found a problem (the message says which and where)."""


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def render_aks(out: Path) -> list[Path]:
    """The AKS manifests with their variables filled in, plus the ScaledJob's Job template as a
    batch/v1 Job (what KEDA creates from it)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for path in sorted((INFRA / "aks").glob("*.yaml")):
        text = string.Template(path.read_text()).substitute(AKS_VALUES)
        target = out / path.name
        target.write_text(text)
        files.append(target)
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "ScaledJob":
                job = {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": doc["metadata"]["name"], "namespace": "dagq"},
                    "spec": doc["spec"]["jobTargetRef"],
                }
                job_file = out / f"{path.stem}.job.yaml"
                job_file.write_text(yaml.safe_dump(job))
                files.append(job_file)
    return files


def check_kubernetes(out: Path, validator: str) -> str:
    """kubernetes-validate --strict over the rendered manifests."""
    files = render_aks(out / "aks")
    done = _run([validator, "--strict", "-k", KUBERNETES_VERSION, "--no-warn", *map(str, files)])
    if done.returncode:
        raise CheckFailed(f"kubernetes-validate:\n{done.stdout}{done.stderr}")
    return f"kubernetes-validate: {len(files)} files valid for Kubernetes {KUBERNETES_VERSION}"


def check_cloud_init(out: Path, cloud_init: str) -> str:
    """cloud-init schema over the rendered user-data."""
    rendering.main(str(out / "user-data"))
    files = sorted((out / "user-data").glob("*.yaml"))
    for path in files:
        done = _run([cloud_init, "schema", "--config-file", str(path)])
        if done.returncode:
            raise CheckFailed(f"cloud-init schema {path.name}:\n{done.stdout}{done.stderr}")
    return f"cloud-init schema: {len(files)} user-data files valid"


def checkov_copy(out: Path) -> Path:
    """infra/ as checkov can parse it: ``fail(`` reads ``string(`` (see the module docstring)."""
    copy = out / "infra"
    shutil.copytree(INFRA, copy)
    for path in copy.rglob("*.bicep"):
        path.write_text(path.read_text().replace("fail(", "string("))
    return copy


def check_checkov(out: Path, checkov: str) -> str:
    """checkov --framework bicep: no failed check, no file it could not parse."""
    copy = checkov_copy(out)
    done = _run([checkov, "-d", str(copy), "--framework", "bicep", "-o", "json", "--compact"])
    try:
        report: Any = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise CheckFailed(f"checkov gave no report ({exc}):\n{done.stderr[-2000:]}") from exc
    report = report[0] if isinstance(report, list) else report
    results, summary = report["results"], report["summary"]
    problems = [
        f"{check['check_id']} {check['check_name']}: {check['resource']} "
        f"({check['file_path']}:{check['file_line_range'][0]})"
        for check in results.get("failed_checks", [])
    ]
    problems += [f"not parsed: {path}" for path in results.get("parsing_errors", [])]
    if problems:
        raise CheckFailed("checkov:\n  " + "\n  ".join(problems))
    return (
        f"checkov: {summary['passed']} passed, {summary['skipped']} skipped with a reason, "
        f"0 failed, {summary['resource_count']} resources"
    )


def main(argv: list[str] | None = None) -> int:
    """Run every check; print one line each; exit 1 on the first problem."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--checkov", default="checkov", help="the checkov executable")
    parser.add_argument("--kubernetes-validate", default="kubernetes-validate")
    parser.add_argument("--cloud-init", default="cloud-init")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dagq-infra-check-") as tmp:
        out = Path(tmp)
        try:
            print(check_cloud_init(out, args.cloud_init))
            print(check_kubernetes(out, args.kubernetes_validate))
            print(check_checkov(out, args.checkov))
        except (CheckFailed, FileNotFoundError) as exc:
            print(f"infra-check failed: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
