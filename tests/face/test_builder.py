"""``dagq.Workflow``: every key of docs/workflow-format.md from Python, the API's compiler and its
located errors, the round trip YAML -> builder -> YAML, and examples/pipeline.py."""

from __future__ import annotations

import dataclasses
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import dagq
from shared.codec import encode_definition
from shared.definition import CompiledWorkflow, compile_text
from shared.names import safe_name_problem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _without_source(wf: CompiledWorkflow) -> bytes:
    """The encoded definition blob, but for the text it was compiled from."""
    return encode_definition(dataclasses.replace(wf, source=None))


def test_every_field_of_the_format() -> None:
    wf = dagq.Workflow(
        "all",
        default_queue="cpu",
        default_task_timeout_s=60,
        max_parallelism=4,
        result_policy="all_tasks_succeed",
        env={"A": "1"},
    )
    prep = wf.task(
        "prep", cmd="echo '{\"shards\": [1, 2]}' > $DAGQ_OUTPUT", cwd="/tmp", env={"B": "2"}
    )
    shard = wf.task(
        "shard",
        cmd="echo {{ item }}",
        after=[prep],
        foreach_from=prep.output("shards"),
        queue_timeout_s=30,
        gpus=1,
        queue="gpu",
    )
    grid = wf.task("grid", cmd="echo {{ x }}", after=["prep"], foreach=[{"x": 1}, {"x": "two"}])
    wf.task(
        "report",
        cmd="true",
        after=[shard, grid],
        dep_policy="all_settled",
        condition="true",
        retries=3,
        retry={
            "initial_delay_s": 1,
            "multiplier": 3,
            "max_delay_s": 10,
            "jitter": 0.5,
            "retry_on_exit_codes": [2],
        },
        timeout_s=5,
        cache={"version": "v1", "ttl": "7d"},
    )
    data = wf.to_dict()
    assert data["tasks"][1] == {
        "name": "shard",
        "kwargs": {"cmd": "echo {{ item }}"},
        "depends_on": ["prep"],
        "queue": "gpu",
        "foreach_from": "inputs.prep.shards",
        "queue_timeout_s": 30,
        "gpus": 1,
    }
    assert data["tasks"][0]["kwargs"] == {
        "cmd": "echo '{\"shards\": [1, 2]}' > $DAGQ_OUTPUT",
        "env": {"B": "2"},
        "cwd": "/tmp",
    }
    assert {k for t in data["tasks"] for k in t} == {
        "name", "kwargs", "depends_on", "queue", "dep_policy", "timeout_s", "num_retries",
        "condition", "foreach", "foreach_from", "retry", "queue_timeout_s", "cache", "gpus",
    }  # fmt: skip
    compiled = wf.validate()
    assert _without_source(compiled) == _without_source(compile_text(yaml.safe_dump(data)))
    assert yaml.safe_load(wf.to_yaml()) == data


def test_errors_are_the_compilers_and_name_the_python_line() -> None:
    wf = dagq.Workflow("bad")
    wf.task("a", cmd="true", after=["missing"])
    line = test_errors_are_the_compilers_and_name_the_python_line.__code__.co_firstlineno + 2
    with pytest.raises(dagq.DefinitionError) as caught:
        wf.validate()
    (issue,) = caught.value.issues
    assert issue.task == "a"
    assert "missing" in issue.message
    assert f"{__file__}:{line}" in issue.message
    with pytest.raises(dagq.DefinitionError) as api:
        compile_text(wf.to_yaml())
    assert [i.location for i in api.value.issues] == [issue.location]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_yaml_builder_yaml_round_trip(path: Path) -> None:
    text = path.read_text()
    wf = dagq.Workflow.from_yaml(text)
    assert yaml.safe_load(wf.to_yaml()) == yaml.safe_load(text)
    assert dagq.Workflow.from_dict(wf.to_dict()).to_dict() == wf.to_dict()
    assert _without_source(wf.validate()) == _without_source(compile_text(text))


def test_the_python_pipeline_is_the_yaml_pipeline() -> None:
    built = runpy.run_path(str(ROOT / "examples" / "pipeline.py"))["build"]()
    yaml_text = (ROOT / "examples" / "pipeline.yaml").read_text()
    assert _without_source(built.validate()) == _without_source(compile_text(yaml_text))


def test_unknown_workflow_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown workflow keys"):
        dagq.Workflow.from_dict({"name": "x", "tasks": [], "nmae": 1})


NAMES = st.text(
    alphabet=st.sampled_from("ABCxyz019_.=-"), min_size=1, max_size=20
)  # the task-name alphabet of docs/workflow-format.md
AWKWARD = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"))
    | st.sampled_from("\n'\":#{}[]&*!|>%@`"),
    max_size=40,
)


WF_NAMES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"))
    | st.sampled_from("'\":#{}[]&*!|>%@`"),
    max_size=40,
)  # a workflow name: any text without control characters


@given(name=NAMES, wf_name=WF_NAMES, cmd=AWKWARD, value=AWKWARD)
def test_names_and_quoting_survive_yaml(name: str, wf_name: str, cmd: str, value: str) -> None:
    # braces start templates (docs/workflow-format.md), checked by their own tests
    cmd = cmd.replace("{", "(").replace("}", ")") if cmd.strip() else "true"
    wf = dagq.Workflow(wf_name if wf_name.strip() else "w", env={"V": value})
    wf.task(name, cmd=cmd, env={"V": value})
    text = wf.to_yaml()
    assert yaml.safe_load(text) == wf.to_dict()
    assert dagq.Workflow.from_yaml(text).to_dict() == wf.to_dict()
    if safe_name_problem(name) is not None:
        with pytest.raises(dagq.DefinitionError) as caught:
            wf.validate()
        assert [i.location for i in caught.value.issues] == ["tasks[0].name"]
        assert f"{__file__}:" in caught.value.issues[0].message
        return
    (task,) = wf.validate().tasks
    assert task.name == name
    assert task.cmd == cmd
    assert task.env["V"] == value


def _submitted(api: Any) -> dict[str, Any]:
    import json

    body: dict[str, Any] = json.loads(api.requests[0]["body"])
    return body


def test_client_submits_a_workflow() -> None:
    from tests.support.fake_api import fake_api

    wf = dagq.Workflow("x")
    wf.task("a", cmd="true")
    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "wf-9", "status": "running", "url": "u"})
        with dagq.Client(api.url) as client:
            submitted = client.submit(wf)
    assert api.requests[0]["headers"]["content-type"] == "application/json"
    assert _submitted(api) == wf.to_dict()
    assert submitted.created is True


def test_the_builder_knows_every_key_of_the_format() -> None:
    from shared.definition.spec import TaskKwargs, TaskSpec, WorkflowSpec

    wf = dagq.Workflow(
        "w",
        default_queue="q",
        default_task_timeout_s=1,
        max_parallelism=1,
        result_policy="all_sinks_succeed",
        env={},
        notify=[{"url": "https://hooks.example.com/x"}],
    )
    wf.param("p", 1)
    wf.task("a", cmd="true", env={}, cwd="/", cache=True, dep_policy="all", condition="true")
    wf.task(
        "b", cmd="true", after=["a"], queue="q", foreach_from="inputs.a.x", retries=0, retry={},
        timeout_s=1, queue_timeout_s=1, gpus=0,
    )  # fmt: skip
    wf.task("c", cmd="echo {{ x }}", foreach={"x": [1]})
    data = wf.to_dict()
    assert set(data) == set(WorkflowSpec.model_fields)
    assert {k for t in data["tasks"] for k in t} == set(TaskSpec.model_fields)
    assert {k for t in data["tasks"] for k in t["kwargs"]} == set(TaskKwargs.model_fields)


@pytest.mark.parametrize("doc", ["README.md", "docs/python.md", "docs/cli.md"])
def test_the_docs_python_uses_only_dagq_and_builds(doc: str) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.S)
    assert blocks
    for block in blocks:
        assert "shared" not in block, f"{doc} shows shared.*: use dagq"
        offline = block.split("with dagq.Client()")[0].split("with Client()")[0]
        exec(compile(offline, doc, "exec"), {})  # the builder part runs and validates
