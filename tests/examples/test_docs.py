"""The README and the CLI reference stay true: their workflow examples validate, every `dagq`
subcommand they mention exists, and their links to files in the repository resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.cli import build_parser, main

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "docs" / "cli.md"]


def _subcommands() -> set[str]:
    parser = build_parser()
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            return set(action.choices)
    raise AssertionError("dagq has no subcommands")


def test_readme_workflow_examples_validate(tmp_path: Path) -> None:
    text = (REPO_ROOT / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert blocks
    for i, block in enumerate(blocks):
        path = tmp_path / f"readme-{i}.yaml"
        path.write_text(block)
        assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_dagq_command_in_the_docs_exists(doc: Path) -> None:
    text = doc.read_text()
    code = re.findall(r"```.*?```", text, re.S) + re.findall(r"`[^`\n]+`", text)
    mentioned = {m for snippet in code for m in re.findall(r"(?<!from )\bdagq ([a-z]+)\b", snippet)}
    assert mentioned
    assert mentioned <= _subcommands()


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    assert "usage: dagq " + command in capsys.readouterr().out


def test_every_linked_file_exists() -> None:
    missing = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            if not (doc.parent / target).exists():
                missing.append(f"{doc.name} -> {target}")
    assert not missing, missing


def test_the_documented_schema_paths_resolve() -> None:
    """docs/workflow-format.md's JSON Schema: the file it names exists, and the editor line it
    gives (for a pipeline file in examples/) points at that file."""
    text = (REPO_ROOT / "docs" / "workflow-format.md").read_text()
    named = re.findall(r"`([\w/]+\.schema\.json)`", text)
    assert named
    assert all((REPO_ROOT / path).is_file() for path in named), named
    lines = re.findall(r"\$schema=(\S+)", text)
    assert lines
    for target in lines:
        assert (REPO_ROOT / "examples" / target).resolve().is_file(), target
