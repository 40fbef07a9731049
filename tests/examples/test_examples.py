"""The examples are valid, the ai4s-jobq one uses only ai4s-jobq's format, and the pipeline's
scripts really pass data through DAGQ_OUTPUT / DAGQ_UPSTREAM (run here without any worker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from shared.cli import main
from shared.definition.compiler import compile_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))

JOBQ_TOP = {
    "name",
    "tasks",
    "default_queue",
    "default_task_timeout_s",
    "max_parallelism",
    "result_policy",
}
JOBQ_TASK = {
    "name",
    "kwargs",
    "depends_on",
    "queue",
    "dep_policy",
    "timeout_s",
    "num_retries",
    "condition",
}


def test_the_expected_examples_exist() -> None:
    names = {f.name for f in FILES}
    assert {"pipeline.yaml", "diamond.yaml", "flaky.yaml", "rerun.yaml", "ai4s-jobq.yaml"} <= names


def test_every_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *map(str, FILES)]) == 0
    out = capsys.readouterr().out
    assert out.count(": ok") == len(FILES)


def test_pipeline_shape() -> None:
    wf = compile_text((EXAMPLES / "pipeline.yaml").read_text())
    names = [t.name for t in wf.tasks]
    train = [t for t in wf.tasks if t.group == "train"]
    assert names[0] == "prep"
    assert len(train) == 6
    assert {t.queue for t in train} == {"gpu"}
    evaluate = wf.tasks[wf.index["evaluate"]]
    assert sorted(wf.tasks[p].name for p in evaluate.parents) == sorted(t.name for t in train)
    assert wf.tasks[wf.index["publish"]].condition


def test_ai4s_jobq_example_uses_no_dagq_extension() -> None:
    data = yaml.safe_load((EXAMPLES / "ai4s-jobq.yaml").read_text())
    assert set(data) <= JOBQ_TOP
    for task in data["tasks"]:
        assert set(task) <= JOBQ_TASK, task["name"]
        assert set(task["kwargs"]) <= {"cmd", "env", "cwd"}


def _run(script: str, args: list[str], tmp: Path, upstream: dict[str, object]) -> object:
    (tmp / "upstream.json").write_text(json.dumps(upstream))
    output = tmp / "output.json"
    output.unlink(missing_ok=True)
    env = {
        **os.environ,
        "DAGQ_UPSTREAM": str(tmp / "upstream.json"),
        "DAGQ_OUTPUT": str(output),
        "DAGQ_TASK": script,
        "DAGQ_ATTEMPT": "1",
    }
    subprocess.run(
        [sys.executable, str(EXAMPLES / "scripts" / script), *args],
        env=env,
        cwd=tmp,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return json.loads(output.read_text())


def test_pipeline_scripts_pass_data_downstream(tmp_path: Path) -> None:
    prep = _run("prep.py", ["--rows", "120"], tmp_path, {})
    runs = {}
    for lr, epochs in (("0.2", "5"), ("4.0", "40")):
        runs[f"train.lr={lr}.epochs={epochs}"] = _run(
            "train.py",
            ["--lr", lr, "--epochs", epochs, "--seconds", "0"],
            tmp_path,
            {"prep": prep},
        )
    best_accuracy = max(run["accuracy"] for run in runs.values())  # type: ignore[index]
    evaluation = _run("evaluate.py", ["--min-accuracy", "0.5"], tmp_path, runs)
    assert isinstance(evaluation, dict)
    best = evaluation["best"]
    assert runs[best]["accuracy"] == best_accuracy  # type: ignore[index]
    assert evaluation["ranking"][0] == best
    assert evaluation["passed"] is True
    published = _run("publish.py", ["--to", "out"], tmp_path, {"evaluate": evaluation})
    assert isinstance(published, dict)
    card = json.loads(Path(published["card"]).read_text())
    assert card["source_run"] == best
