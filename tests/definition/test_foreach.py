"""foreach: expansion names and order, fan-in, templates, and shell quoting proven through sh."""

from __future__ import annotations

import os
import subprocess

import pytest

from shared.definition.foreach import expansion_name
from shared.definition.templating import parse_template, render_value
from shared.names import safe_name_problem
from tests.definition.helpers import compile_dict, one_issue, task, workflow


def test_matrix_expands_in_declared_order_last_parameter_fastest() -> None:
    wf = compile_dict(
        workflow(
            task("prep"),
            task(
                "train",
                "train --seed {{ seed }} --lr {{lr}}",
                foreach={"seed": [1, 2], "lr": [0.1, 0.01]},
                depends_on=["prep"],
            ),
            task("eval", depends_on=["train"]),
        )
    )
    assert [t.name for t in wf.tasks] == [
        "prep",
        "train.seed=1.lr=0.1",
        "train.seed=1.lr=0.01",
        "train.seed=2.lr=0.1",
        "train.seed=2.lr=0.01",
        "eval",
    ]
    assert [t.cmd for t in wf.tasks[1:5]] == [
        "train --seed 1 --lr 0.1",
        "train --seed 1 --lr 0.01",
        "train --seed 2 --lr 0.1",
        "train --seed 2 --lr 0.01",
    ]
    expansions = wf.tasks[1:5]
    assert {t.group for t in expansions} == {"train"}
    assert expansions[2].params == {"seed": 2, "lr": 0.1}
    assert all(t.parents == (0,) for t in expansions)
    # Depending on the foreach task means depending on every expansion (fan-in).
    assert wf.tasks[5].parents == (1, 2, 3, 4)
    assert wf.tasks[0].group is None
    assert wf.tasks[0].params is None


def test_list_of_mappings_expands_in_list_order() -> None:
    wf = compile_dict(
        workflow(
            task(
                "fit",
                "fit {{ model }} {{ size }}",
                foreach=[{"model": "small", "size": 1}, {"model": "large", "size": 8}],
            )
        )
    )
    assert [(t.name, t.cmd) for t in wf.tasks] == [
        ("fit.model=small.size=1", "fit small 1"),
        ("fit.model=large.size=8", "fit large 8"),
    ]


def test_depending_on_one_expansion() -> None:
    wf = compile_dict(
        workflow(task("t", foreach={"i": [1, 2, 3]}), task("b", depends_on=["t.i=2"]))
    )
    assert wf.tasks[3].parents == (1,)


def test_expansions_of_two_foreach_tasks_chain_as_groups() -> None:
    wf = compile_dict(
        workflow(
            task("a", foreach={"i": [1, 2]}), task("b", foreach={"j": [1, 2, 3]}, depends_on=["a"])
        )
    )
    assert [t.parents for t in wf.tasks[2:]] == [(0, 1)] * 3
    assert wf.children[0] == (2, 3, 4)


def test_values_render_as_written_in_yaml() -> None:
    assert [render_value(v) for v in (True, False, 1, 1.0, 0.1, 1e-05, "x")] == [
        "true",
        "false",
        "1",
        "1.0",
        "0.1",
        "1e-05",
        "x",
    ]


def test_unsafe_values_fall_back_to_a_hash_in_the_name() -> None:
    wf = compile_dict(
        workflow(
            task("t", "run {{ path }} {{ n }}", foreach={"path": ["a/b c", "../x", "ok"], "n": [1]})
        )
    )
    names = [t.name for t in wf.tasks]
    assert names[2] == "t.path=ok.n=1"
    assert names[0].startswith("t.path=_")
    assert names[0].endswith(".n=1")
    assert len(set(names)) == 3
    assert all(safe_name_problem(n) is None for n in names)
    # Deterministic: the same definition gives the same names.
    assert names == [
        t.name
        for t in compile_dict(
            workflow(task("t", "x", foreach={"path": ["a/b c", "../x", "ok"], "n": [1]}))
        ).tasks
    ]


def test_too_long_names_fall_back_to_the_index() -> None:
    assert (
        expansion_name("t", {"a": "x" * 30, "b": "y" * 30, "c": "z" * 30, "d": "w" * 30}, 7)
        == "t.7"
    )
    assert expansion_name("t", {"a": "1."}, 0).startswith("t.a=_")  # would end with '.' / make '..'


def test_templates_in_env_cwd_and_queue_are_raw() -> None:
    wf = compile_dict(
        workflow(
            {
                "name": "t",
                "foreach": {"gpu": ["A100", "H100"]},
                "queue": "gpu-{{ gpu }}",
                "kwargs": {
                    "cmd": "nvidia-smi",
                    "env": {"GPU": "{{ gpu }} x"},
                    "cwd": "/runs/{{gpu}}",
                },
            }
        )
    )
    assert [(t.queue, t.env, t.cwd) for t in wf.tasks] == [
        ("gpu-A100", {"GPU": "A100 x", "DAGQ_VAR_gpu": "A100"}, "/runs/A100"),
        ("gpu-H100", {"GPU": "H100 x", "DAGQ_VAR_gpu": "H100"}, "/runs/H100"),
    ]


def test_templated_queue_is_validated() -> None:
    issue = one_issue(
        workflow(task("t", foreach={"q": ["ok", "not ok"]}, queue="{{ q }}")),
        location="tasks.t.queue",
        contains="in expansion 't.q=_",
    )
    assert "invalid queue name 'not ok'" in issue.message


def test_templated_cwd_is_validated() -> None:
    one_issue(
        workflow(
            {"name": "t", "foreach": {"d": ["a\nb"]}, "kwargs": {"cmd": "x", "cwd": "/w/{{ d }}"}}
        ),
        location="tasks.t.kwargs.cwd",
        contains="without control characters",
    )


def test_unknown_template_variable() -> None:
    issue = one_issue(
        workflow(task("t", "echo {{ sed }}", foreach={"seed": [1]})),
        location="tasks.t.kwargs",
        contains="unknown template variable {{ sed }}; did you mean 'seed'?",
    )
    assert issue.task == "t"


def test_template_variable_missing_from_one_list_item() -> None:
    one_issue(
        workflow(task("t", "echo {{ a }} {{ b }}", foreach=[{"a": 1, "b": 2}, {"a": 3}])),
        location="tasks.t.foreach[1]",
        contains="template variable(s) b used by the task are not set by foreach[1]",
    )


@pytest.mark.parametrize("text", ["{{ a-b }}", "{{ }}", "{{ a b }}", "{{ __import__('os') }}"])
def test_invalid_placeholders(text: str) -> None:
    one_issue(
        workflow(task("t", f"echo {text}", foreach={"a": [1]})),
        location="tasks.t.kwargs.cmd",
        contains="invalid placeholder",
    )


@pytest.mark.parametrize(
    ("foreach", "contains"),
    [
        ({"a": 1}, "foreach.a must be a list of values"),
        ({"a": [[1]]}, "foreach.a[0]: parameter values must be strings, numbers or booleans"),
        ({"a": [None]}, "got null"),
        ({"a-b": [1]}, "parameter names must be letters"),
        ([{"a": 1}, 2], "foreach[1] must be a mapping"),
        ([{}], "foreach[0] is empty"),
        ("abc", "foreach must be a list of parameter mappings or a mapping"),
    ],
)
def test_foreach_shape(foreach: object, contains: str) -> None:
    one_issue(workflow(task("t", foreach=foreach)), location="tasks.t.foreach", contains=contains)


def test_a_dotted_placeholder_is_no_foreach_parameter() -> None:
    # ({{ item.key }} is for a dynamic fan-out's items; a foreach parameter is one plain name.)
    one_issue(
        workflow(task("t", "echo {{ a.b }}", foreach={"a": [1]})),
        location="tasks.t.kwargs",
        contains="unknown template variable {{ a.b }}",
    )


def test_tasks_without_foreach_are_not_templated() -> None:
    # ai4s-jobq commands may contain {{ }} (e.g. Go templates): only foreach tasks substitute.
    wf = compile_dict(workflow(task("a", "docker ps --format '{{ .Names }}'")))
    assert wf.tasks[0].cmd == "docker ps --format '{{ .Names }}'"


HOSTILE = [
    "x; rm -rf /",
    "$(touch /tmp/dagq-pwned)",
    "`id`",
    "a'b\"c",
    "line1\nline2",
    "*",
    "-n",
    "",
    "  spaced  ",
    "$HOME && echo hi | cat > out",
    "\\",
]


def test_substituted_values_are_one_shell_word_each() -> None:
    wf = compile_dict(workflow(task("t", "printf '%s\\n' {{ v }}", foreach={"v": HOSTILE})))
    for expansion, value in zip(wf.tasks, HOSTILE, strict=True):
        out = subprocess.run(  # with the expansion's env (DAGQ_VAR_v), as a worker runs it
            ["sh", "-c", expansion.cmd],
            env={**os.environ, **expansion.env},
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        assert out.stdout == value + "\n", (expansion.cmd, out.stdout)


def test_template_parts() -> None:
    template = parse_template("a {{x}} b {{ y }}{{x}}")
    assert template.parts == ("a ", "x", " b ", "y", "", "x", "")
    assert template.variables == ("x", "y", "x")
    assert template.render({"x": "1 2", "y": True}, quote=True) == "a '1 2' b true'1 2'"
    assert template.render({"x": "1 2", "y": True}, quote=False) == "a 1 2 b true1 2"
