"""Workflow parameters (issue 29): declared in ``params:``, given at submit as text, read as the
declared type, filled into ``{{ params.NAME }}`` of cmd, env values and cwd, and every problem
reported at once, located, with "did you mean"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.codec.definition import decode_definition, encode_definition
from shared.definition.compiler import compile_text
from shared.errors import DefinitionError, Issue
from tests.definition.helpers import task, workflow


def compiled(definition: dict[str, Any], **given: str) -> Any:
    return compile_text(json.dumps(definition), fmt="json", params=given or None)


def problems(definition: dict[str, Any], **given: str) -> list[Issue]:
    with pytest.raises(DefinitionError) as info:
        compiled(definition, **given)
    return info.value.issues


def located(issues: list[Issue]) -> dict[str, str]:
    return {i.location: i.message for i in issues}


NIGHTLY = workflow(
    task("eval", "python eval.py --ckpt {{ params.checkpoint }} --lr {{ params.lr }}"),
    params={"checkpoint": {"description": "the checkpoint"}, "lr": 0.1, "fast": False},
)


def test_defaults_and_given_values_fill_the_command_each_as_one_word() -> None:
    wf = compiled(NIGHTLY, checkpoint="ckpt 42", lr="0.01")
    assert wf.tasks[0].cmd == "python eval.py --ckpt 'ckpt 42' --lr 0.01"
    assert wf.params == {"checkpoint": "ckpt 42", "lr": 0.01, "fast": False}


def test_given_text_is_read_as_the_declared_type() -> None:
    wf = compiled(NIGHTLY, checkpoint="c", lr="3", fast="true")
    assert wf.params == {"checkpoint": "c", "lr": 3, "fast": True}
    assert compiled(NIGHTLY, checkpoint="c", lr="1e-3").params["lr"] == 0.001
    # A string parameter keeps its text as given, digits and all.
    assert compiled(NIGHTLY, checkpoint="007").params["checkpoint"] == "007"


@pytest.mark.parametrize(
    ("given", "kind"),
    [({"lr": "fast"}, "number"), ({"lr": "nan"}, "number"), ({"lr": "1_000"}, "number"),
     ({"fast": "yes"}, "bool"), ({"fast": "1"}, "bool")],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_located(given: dict[str, str], kind: str) -> None:
    (name,) = given
    issues = problems(NIGHTLY, checkpoint="c", **given)
    assert len(issues) == 1
    assert issues[0].location == f"param {name}"
    assert f"{name} is a {kind} parameter" in issues[0].message


def test_a_missing_required_parameter_says_how_to_give_it() -> None:
    (issue,) = problems(NIGHTLY)
    assert issue.location == "params.checkpoint"
    assert "required" in issue.message
    assert "--param checkpoint=VALUE" in issue.message


def test_an_undeclared_name_at_submit_gets_did_you_mean() -> None:
    (issue,) = problems(NIGHTLY, checkpoint="c", lrr="2")
    assert issue.location == "param lrr"
    assert "did you mean 'lr'?" in issue.message
    assert "checkpoint, fast, lr" in issue.message


def test_a_workflow_without_params_refuses_any_given() -> None:
    (issue,) = problems(workflow(task("a")), x="1")
    assert "declares no parameters" in issue.message


def test_an_unknown_placeholder_gets_did_you_mean_in_cmd_env_and_cwd() -> None:
    definition = workflow(
        {"name": "a", "kwargs": {"cmd": "run {{ params.checkpont }}",
                                 "env": {"X": "{{ params.lrate }}"}, "cwd": "/{{ params.nope }}"}},
        params={"checkpoint": "c", "lr": 1},
    )  # fmt: skip
    found = located(problems(definition))
    assert "did you mean 'checkpoint'?" in found["tasks.a.kwargs.cmd"]
    assert "unknown parameter {{ params.lrate }}" in found["tasks.a.kwargs.env.X"]
    assert "(params: checkpoint, lr)" in found["tasks.a.kwargs.cwd"]


def test_every_problem_is_reported_at_once() -> None:
    definition = workflow(
        task("a", "run {{ params.chekpoint }}"),
        task("b", "run {{ params.lr }}", foreach={"s": [1, 2]}),
        params={"checkpoint": None, "lr": 0.1, "n": {"default": "x", "type": "number"}},
    )
    found = located(problems(definition, lr="high", extra="1"))
    assert set(found) == {
        "param extra", "param lr", "params.checkpoint", "params.n", "tasks.a.kwargs.cmd"
    }  # fmt: skip
    assert "the default 'x' is not a number" in found["params.n"]


def test_env_values_and_cwd_get_the_raw_value_and_every_task_the_variable() -> None:
    definition = workflow(
        {"name": "a", "kwargs": {"cmd": "true", "env": {"CKPT": "s3://{{ params.c }}"},
                                 "cwd": "/work/{{ params.c }}"}},
        env={"RUN": "nightly-{{ params.c }}"},
        params={"c": "x"},
    )  # fmt: skip
    (t,) = compiled(definition, c="it's").tasks
    assert t.env == {"RUN": "nightly-it's", "CKPT": "s3://it's"}
    assert t.cwd == "/work/it's"


def test_a_value_with_a_line_break_is_read_from_its_variable() -> None:
    wf = compiled(NIGHTLY, checkpoint="a\nb")
    assert wf.tasks[0].cmd == 'python eval.py --ckpt "$DAGQ_PARAM_checkpoint" --lr 0.1'


def test_a_placeholder_inside_quotes_is_refused_with_the_variable_to_read() -> None:
    definition = workflow(task("a", 'echo "{{ params.c }}"'), params={"c": "x"})
    (issue,) = problems(definition)
    assert issue.location == "tasks.a.kwargs.cmd"
    assert "inside double quotes" in issue.message
    assert '"$DAGQ_PARAM_c"' in issue.message


def test_a_malformed_parameter_placeholder_is_refused() -> None:
    (issue,) = problems(workflow(task("a", "run {{ params }}"), params={"c": "x"}))
    assert "write {{ params.NAME }}" in issue.message


def test_env_may_not_hide_a_parameter_variable() -> None:
    definition = workflow(
        {"name": "a", "kwargs": {"cmd": "true", "env": {"DAGQ_PARAM_c": "y"}}}, params={"c": "x"}
    )
    (issue,) = problems(definition)
    assert issue.location == "tasks.a.kwargs.env.DAGQ_PARAM_c"


def test_foreach_tasks_use_parameters_beside_their_own_values() -> None:
    definition = workflow(
        task("t", "fit --seed {{ seed }} --lr {{ params.lr }}", foreach={"seed": [1, 2]}),
        params={"lr": 0.1},
    )
    wf = compiled(definition, lr="0.5")
    assert [t.cmd for t in wf.tasks] == ["fit --seed 1 --lr 0.5", "fit --seed 2 --lr 0.5"]
    assert "DAGQ_VAR_params_lr" not in wf.tasks[0].env
    bad = workflow(
        task("t", "fit {{ seed }} {{ params.l }}", foreach={"seed": [1]}), params={"lr": 1}
    )
    (issue,) = problems(bad)
    assert "did you mean 'lr'?" in issue.message


def test_a_foreach_from_task_keeps_its_parameters_for_the_engine() -> None:
    definition = workflow(
        task("list", "echo"),
        task("each", "run {{ item }} {{ params.lr }}", depends_on=["list"],
             foreach_from="inputs.list.items"),
        params={"lr": 0.1},
    )  # fmt: skip
    wf = compiled(definition)
    assert wf.tasks[1].cmd == "run {{ item }} {{ params.lr }}"
    each = {**definition["tasks"][1], "kwargs": {"cmd": "{{ params.x }}"}}
    bad = {**definition, "tasks": [definition["tasks"][0], each]}
    assert "unknown parameter {{ params.x }}" in problems(bad)[0].message


def test_other_placeholders_of_a_plain_task_stay_text_as_in_ai4s_jobq() -> None:
    text = "echo {{ not_a_param }} '{{x}}'"
    (t,) = compiled(workflow(task("a", text))).tasks
    assert t.cmd == text
    (t,) = compiled(workflow(task("a", text + " {{ params.p }}"), params={"p": 1})).tasks
    assert t.cmd == text + " 1"


def test_the_values_are_in_the_definition_blob_and_compare() -> None:
    one = compiled(NIGHTLY, checkpoint="a")
    assert decode_definition(encode_definition(one)).params == one.params
    assert compiled(NIGHTLY, checkpoint="a") == one
    assert compiled(NIGHTLY, checkpoint="b") != one
    # The same rendered tasks with another unused value is still another run's definition.
    assert compiled(NIGHTLY, checkpoint="a", fast="true") != one


@pytest.mark.parametrize(
    ("params", "where"),
    [({"1x": 1}, "params.1x"), ({"a": [1]}, "params.a"), ({"a": {"default": [1]}}, "params.a"),
     ({"a": {"type": "int"}}, "params.a.type"), ({"a": {"bogus": 1}}, "unknown key 'bogus'")],
)  # fmt: skip
def test_bad_declarations_are_shape_errors(params: dict[str, Any], where: str) -> None:
    issues = problems(workflow(task("a"), params=params))
    assert any(where in f"{i.location} {i.message}" for i in issues), [str(i) for i in issues]


def test_too_long_a_value_is_refused() -> None:
    (issue,) = problems(NIGHTLY, checkpoint="x" * 5000)
    assert issue.location == "params.checkpoint"
    assert "limit" in issue.message


@pytest.mark.parametrize("written", ["{{ lr }}", "{{ param.lr }}"])
def test_a_parameter_written_without_params_is_pointed_at(written: str) -> None:
    (issue,) = problems(workflow(task("a", f"fit --lr {written}"), params={"lr": 0.1}))
    assert issue.location == "tasks.a.kwargs.cmd"
    assert "write {{ params.lr }}" in issue.message
    # Without params: declared, the text is what it always was (ai4s-jobq).
    (t,) = compiled(workflow(task("a", f"fit --lr {written}"))).tasks
    assert t.cmd == f"fit --lr {written}"


def test_a_foreach_task_naming_a_parameter_bare_is_told_its_spelling() -> None:
    definition = workflow(task("t", "fit {{ s }} {{ lr }}", foreach={"s": [1]}), params={"lr": 1})
    (issue,) = problems(definition)
    assert "the workflow parameter is {{ params.lr }}" in issue.message
