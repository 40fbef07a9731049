"""``make screenshots`` leaves tracked files alone unless asked: by default the PNGs go to the
git-ignored ``.run/screenshots/``; ``make screenshots UPDATE=1`` (``--update``) writes
docs/screenshots/, the README's. (Issue 20: every run rewrote docs/screenshots/*.png, so the tree
was dirty after each run even when nothing about the dashboard had changed.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools import screenshots

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"


@pytest.fixture
def destinations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Where each ``main`` call would write (the stack and the browser are not started)."""
    seen: list[Path] = []
    monkeypatch.setattr(screenshots, "capture", seen.append)
    return seen


def test_by_default_the_pngs_go_to_the_git_ignored_run_folder(destinations: list[Path]) -> None:
    assert screenshots.main([]) == 0
    [out] = destinations
    assert not out.is_relative_to(DOCS)
    assert out == (REPO_ROOT / ".run" / "screenshots").resolve()
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(out / "workflows.png")], cwd=REPO_ROOT, check=False
    )
    assert ignored.returncode == 0, f"{out} is not git-ignored"


def test_update_writes_the_readmes_screenshots(destinations: list[Path]) -> None:
    assert screenshots.main(["--update"]) == 0
    assert destinations == [(DOCS / "screenshots").resolve()]
    readme = (REPO_ROOT / "README.md").read_text()
    assert "docs/screenshots/workflows.png" in readme


@pytest.mark.parametrize(("extra", "flag"), [([], False), (["UPDATE=1"], True)])
def test_make_passes_update_only_when_asked(extra: list[str], flag: bool) -> None:
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "screenshots", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    [line] = [line for line in dry.stdout.splitlines() if "devtools.screenshots" in line]
    assert ("--update" in line) is flag
