"""A task's environment holds each workflow parameter as DAGQ_PARAM_<NAME> (issue 29), set by the
worker from the task message, under the DAGQ_* contract variables nothing overrides."""

from __future__ import annotations

from pathlib import Path

from shared.definition.templating import PARAM_ENV_PREFIX as COMPILER_PREFIX
from shared.messages import TaskMessage
from worker_agent.files import AttemptPaths
from worker_agent.task_env import PARAM_ENV_PREFIX, task_environment


def test_the_worker_sets_each_parameter_as_the_compiler_names_it(tmp_path: Path) -> None:
    assert PARAM_ENV_PREFIX == COMPILER_PREFIX  # the name a multi-line value is read from
    message = TaskMessage(
        workflow_id="wf", task="t", attempt=1, queue="cpu", cmd="true",
        env={"X": "1"}, params={"lr": "0.01", "ckpt": "a\nb", "DAGQ_TASK": "x"},
    )  # fmt: skip
    env = task_environment({"PATH": "/bin"}, message, AttemptPaths.create(tmp_path, message), None)
    assert env["DAGQ_PARAM_lr"] == "0.01"
    assert env["DAGQ_PARAM_ckpt"] == "a\nb"
    assert env["X"] == "1"
    assert env["DAGQ_TASK"] == "t"


def test_a_message_without_parameters_sets_none(tmp_path: Path) -> None:
    message = TaskMessage(workflow_id="wf", task="t", attempt=1, queue="cpu", cmd="true")
    env = task_environment({}, message, AttemptPaths.create(tmp_path, message), None)
    assert not [k for k in env if k.startswith("DAGQ_PARAM_")]
