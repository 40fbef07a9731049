"""The GPU examples run as a worker would run them, on a machine with neither a GPU nor torch:
the smoke test's command with a stand-in nvidia-smi, and the training example's three commands
(prep -> train -> evaluate) through DAGQ_UPSTREAM / DAGQ_OUTPUT, with the pure-Python step."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from shared.definition.compiler import compile_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _task_cmds(name: str) -> dict[str, str]:
    wf = compile_text((EXAMPLES / name).read_text())
    return {task.name: task.cmd for task in wf.tasks}


def _shell(cmd: str, tmp: Path, upstream: dict[str, object], **env: str) -> tuple[str, object]:
    (tmp / "upstream.json").write_text(json.dumps(upstream))
    output = tmp / "output.json"
    output.unlink(missing_ok=True)
    done = subprocess.run(
        ["sh", "-c", cmd],
        env={
            **os.environ,
            "DAGQ_EXAMPLES_DIR": str(EXAMPLES),
            "DAGQ_UPSTREAM": str(tmp / "upstream.json"),
            "DAGQ_OUTPUT": str(output),
            **env,
        },
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout, json.loads(output.read_text()) if output.exists() else None


def test_the_smoke_test_runs_on_the_gpu_queue_and_asks_nvidia_smi(tmp_path: Path) -> None:
    wf = compile_text((EXAMPLES / "gpu-smoke.yaml").read_text())
    assert {task.queue for task in wf.tasks} == {"gpu"}
    stub = tmp_path / "bin" / "nvidia-smi"
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\necho "0, Tesla T4, 550.90.07, 15360 MiB ($*)"\n')
    stub.chmod(0o755)
    path = f"{stub.parent}:{os.environ['PATH']}"
    out, _ = _shell(_task_cmds("gpu-smoke.yaml")["smi"], tmp_path, {}, PATH=path,
                    CUDA_VISIBLE_DEVICES="0")  # fmt: skip
    assert "CUDA_VISIBLE_DEVICES=0" in out
    assert "Tesla T4" in out
    assert "--query-gpu=index,name,driver_version,memory.total" in out


def test_the_training_example_trains_on_the_gpu_queue_without_torch(tmp_path: Path) -> None:
    wf = compile_text((EXAMPLES / "train-step.yaml").read_text())
    assert wf.tasks[wf.index["train"]].queue == "gpu"
    cmds = _task_cmds("train-step.yaml")
    _, prep = _shell(cmds["prep"], tmp_path, {})
    _, train = _shell(cmds["train"], tmp_path, {"prep": prep}, CUDA_VISIBLE_DEVICES="0")
    assert isinstance(train, dict)
    assert train["backend"] in ("python", "torch")  # torch where this machine has it
    assert train["final_loss"] < train["first_loss"]
    out, _ = _shell(cmds["evaluate"], tmp_path, {"train": train})
    assert out.startswith("loss ")
