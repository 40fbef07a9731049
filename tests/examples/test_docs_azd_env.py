"""Every documented line that loads the azd environment exports it, so the `dagq` CLI and a
worker started afterwards see it (issue 35: `eval "$(azd env get-values)"` alone set shell
variables the CLI never saw, and it talked to the local default instead). Each such line of the
README, infra/README.md and the quickstart runs against a stub `azd`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "infra/README.md", "docs/azure-gpu-quickstart.md"]


def loading_lines() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for line in (REPO / doc).read_text().splitlines():
            match = re.search(r"(set -a; )?eval \"\$\(azd env get-values\)\"(; set \+a)?", line)
            if match:
                found.append((doc, match.group(0)))
    return found


@pytest.mark.parametrize(("doc", "line"), loading_lines())
def test_the_azd_environment_reaches_the_programs_started_after(
    doc: str, line: str, tmp_path: Path
) -> None:
    stub = tmp_path / "azd"
    stub.write_text("#!/bin/sh\necho 'DAGQ_API_URL=\"https://dagq.example.net\"'\n")
    stub.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    script = f"{line}\nsh -c 'echo \"$DAGQ_API_URL\"'"
    seen = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "https://dagq.example.net", f"{doc}: {line}"
