"""``dagq validate``: exit codes and output, in-process and once through a real subprocess."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from shared.cli import main

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
name: pipeline
tasks:
  - name: prep
    queue: cpu
    kwargs: {cmd: echo prep}
  - name: train
    queue: gpu
    foreach: {seed: [1, 2, 3]}
    depends_on: [prep]
    kwargs: {cmd: "train --seed {{ seed }}"}
  - name: eval
    queue: cpu
    depends_on: [train]
    kwargs: {cmd: echo eval}
"""

BAD = """\
name: broken
tasks:
  - name: a
    kwargs: {cmd: x}
    depends_on: [b, nope]
  - name: b
    kwargs: {cmd: x}
    depends_on: [a]
    queue: "no good"
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "good": tmp_path / "pipeline.yaml",
        "bad": tmp_path / "broken.yaml",
        "json": tmp_path / "one.json",
        "syntax": tmp_path / "syntax.yml",
    }
    paths["good"].write_text(GOOD)
    paths["bad"].write_text(BAD)
    paths["json"].write_text(
        '{"name": "j", "tasks": [{"name": "only", "kwargs": {"cmd": "true"}}]}'
    )
    paths["syntax"].write_text("name: [unclosed\n")
    return paths


def test_valid_files_exit_0_with_one_summary_line_each(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(files["good"]), str(files["json"])]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"{files['good']}: ok — 5 tasks (1 root, 1 sink), queues: cpu, gpu",
        f"{files['json']}: ok — 1 task (1 root, 1 sink), queues: default",
    ]
    assert out.err == ""


def test_invalid_file_exits_2_with_every_error(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(files["good"]), str(files["bad"])]) == 2
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"{files['good']}: ok — 5 tasks (1 root, 1 sink), queues: cpu, gpu"
    ]
    bad = files["bad"]
    assert out.err.splitlines() == [
        f"{bad}:tasks.b.queue: invalid queue name 'no good': use letters, digits and single '-'"
        " or '_' between them",
        f"{bad}:tasks.a.depends_on: unknown dependency 'nope'",
        f"{bad}:tasks.a.depends_on: dependency cycle: 'a', which depends on 'b', which depends on"
        " 'a' (tasks in the cycle: a, b)",
    ]


def test_syntax_error_and_missing_file(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    assert main(["validate", str(files["syntax"]), str(missing)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{files['syntax']}:line 2, column 1: YAML error")
    assert err[1] == f"{missing}: cannot read: No such file or directory"


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD.encode())))
    assert main(["validate", "-"]) == 0
    assert capsys.readouterr().out.startswith("<stdin>: ok — 5 tasks")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_python_dash_m_subprocess(files: dict[str, Path]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shared.cli", "validate", str(files["bad"]), "-"],
        input=GOOD,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == "<stdin>: ok — 5 tasks (1 root, 1 sink), queues: cpu, gpu\n"
    assert f"{files['bad']}:tasks.a.depends_on: unknown dependency 'nope'" in done.stderr
    assert "Traceback" not in done.stderr
