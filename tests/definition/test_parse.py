"""Parsing: text -> WorkflowSpec: syntax, encoding, shape, types, unknown keys (no tracebacks)."""

from __future__ import annotations

import json

import pytest

from shared.definition.compiler import compile_text, parse_definition
from shared.errors import DefinitionError
from shared.limits import MAX_DEFINITION_BYTES
from tests.definition.helpers import issues_of, one_issue, task, workflow


def _issues(text: str | bytes, **kwargs: object) -> list[str]:
    with pytest.raises(DefinitionError) as info:
        parse_definition(text, source="flow.yaml", **kwargs)  # type: ignore[arg-type]
    assert str(info.value).startswith("flow.yaml: ")
    return [str(i) for i in info.value.issues]


def test_yaml_and_json_give_the_same_spec() -> None:
    definition = workflow(task("a"), task("b", depends_on=["a"], queue="gpu"))
    as_json = parse_definition(json.dumps(definition))
    as_yaml = parse_definition(
        "name: wf\ntasks:\n  - name: a\n    kwargs: {cmd: 'true'}\n"
        "  - name: b\n    kwargs: {cmd: 'true'}\n    depends_on: [a]\n    queue: gpu\n"
    )
    assert as_json == as_yaml
    assert as_json.default_queue == "default"
    assert as_json.result_policy == "all_sinks_succeed"


def test_yaml_syntax_error_has_line_and_column() -> None:
    (issue,) = _issues("name: wf\ntasks:\n  - name: a\n   kwargs: {cmd: x\n")
    assert issue.startswith("line 4, column")
    assert "YAML error" in issue


def test_json_syntax_error_has_line_and_column() -> None:
    (issue,) = _issues('{"name": "wf",\n "tasks": [}', fmt="json")
    assert issue.startswith("line 2, column 12: JSON syntax error")


def test_bad_utf8_is_an_issue_with_its_line() -> None:
    (issue,) = _issues(b"name: wf\ntasks: []\n# caf\xe9\n")
    assert issue.startswith("line 3: not valid UTF-8")


def test_utf8_bom_is_accepted() -> None:
    spec = parse_definition(b"\xef\xbb\xbf" + json.dumps(workflow(task("a"))).encode())
    assert spec.tasks[0].name == "a"


@pytest.mark.parametrize(
    ("text", "got"),
    [("- a\n- b\n", "a list"), ("just text", "a string"), ("", "null"), ("42", "a number")],
)
def test_top_level_must_be_a_mapping(text: str, got: str) -> None:
    (issue,) = _issues(text)
    assert (
        issue
        == f"(top level): a workflow definition is a mapping with 'name' and 'tasks', got {got}"
    )


def test_unknown_keys_everywhere_say_where_and_suggest() -> None:
    definition = workflow(
        {"name": "a", "kwargs": {"cmd": "x", "evn": {}}, "depend_on": ["b"]},
        task("b", retry={"initial_delay": 1}),
        max_paralelism=2,
    )
    messages = {i.location: (i.message, i.task) for i in issues_of(definition)}
    assert (
        messages["max_paralelism"][0]
        == "unknown key 'max_paralelism'; did you mean 'max_parallelism'?"
    )
    assert messages["tasks.a.depend_on"] == (
        "unknown key 'depend_on'; did you mean 'depends_on'?",
        "a",
    )
    assert messages["tasks.a.kwargs.evn"] == ("unknown key 'evn'; did you mean 'env'?", "a")
    assert messages["tasks.b.retry.initial_delay"][0].startswith(
        "unknown key 'initial_delay'; did you mean 'initial_delay_s'?"
    )


def test_unknown_key_without_a_close_match_lists_the_allowed_keys() -> None:
    issue = one_issue(
        workflow(task("a", colour="red")), location="tasks.a.colour", contains="unknown key"
    )
    assert "allowed here: name, kwargs, depends_on" in issue.message


def test_wrong_types_name_the_task_field_and_value() -> None:
    definition = workflow(
        {"name": "a", "kwargs": {"cmd": 5, "env": {"N": 1}}},
        task("b", num_retries="2", timeout_s=True, depends_on="a"),
    )
    got = {i.location: i for i in issues_of(definition)}
    assert (
        got["tasks.a.kwargs.cmd"].message == "expected a string, got a number 5 (quote it in YAML)"
    )
    assert got["tasks.a.kwargs.cmd"].task == "a"
    assert "expected a string" in got["tasks.a.kwargs.env.N"].message
    assert got["tasks.b.num_retries"].message == 'expected an integer, got a string "2"'
    assert "got a boolean true" in got["tasks.b.timeout_s"].message
    assert "expected a valid list" not in got["tasks.b.depends_on"].message
    assert got["tasks.b.depends_on"].message.startswith("expected a list")


def test_mapping_expected() -> None:
    got = {
        i.location: i.message
        for i in issues_of("name: x\ntasks:\n  -\n  - name: a\n    kwargs: echo hi\n    retry: 3\n")
    }
    assert got == {
        "tasks[0]": "expected a mapping, got null",
        "tasks.a.kwargs": 'expected a mapping, got a string "echo hi" (write kwargs: {cmd: ...})',
        "tasks.a.retry": "expected a mapping, got a number 3",
    }


def test_missing_required_keys() -> None:
    issues = issues_of({"tasks": [{"name": "a", "kwargs": {}}]})
    assert {(i.location, i.message) for i in issues} == {
        ("name", "required key 'name' is missing"),
        ("tasks.a.kwargs.cmd", "required key 'cmd' is missing"),
    }


def test_task_without_valid_name_is_located_by_index() -> None:
    issues = issues_of(workflow(task("a"), {"kwargs": {"cmd": "x"}}))
    assert [(i.location, i.task) for i in issues] == [("tasks[1].name", None)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "dep_policy",
            "most",
            "dep_policy must be 'all', 'any', 'all_settled' or an integer >= 1, got 'most'",
        ),
        (
            "dep_policy",
            0,
            "dep_policy must be 'all', 'any', 'all_settled' or an integer >= 1, got 0",
        ),
        ("num_retries", -1, "must be greater than or equal to 0, got -1"),
        ("timeout_s", 0, "must be greater than 0, got 0"),
        ("queue_timeout_s", -5, "must be greater than 0, got -5"),
    ],
)
def test_value_ranges(field: str, value: object, message: str) -> None:
    one_issue(
        workflow(task("a"), task("b", depends_on=["a"], **{field: value})),
        location=f"tasks.b.{field}",
        contains=message,
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_parallelism", 0, "must be greater than or equal to 1, got 0"),
        ("result_policy", "most_succeed", "expected 'all_sinks_succeed' or 'all_tasks_succeed'"),
        ("default_task_timeout_s", -1, "must be greater than 0"),
    ],
)
def test_workflow_value_ranges(field: str, value: object, message: str) -> None:
    one_issue(workflow(task("a"), **{field: value}), location=field, contains=message)


def test_retry_fields_are_checked() -> None:
    issues = issues_of(
        workflow(task("a", retry={"multiplier": 0.5, "jitter": 2, "retry_on_exit_codes": "1"}))
    )
    assert {i.location for i in issues} == {
        "tasks.a.retry.multiplier",
        "tasks.a.retry.jitter",
        "tasks.a.retry.retry_on_exit_codes",
    }
    assert all(i.task == "a" for i in issues)


def test_duplicate_yaml_keys_are_errors() -> None:
    (issue,) = _issues("name: wf\ntasks:\n  - name: a\n    name: b\n    kwargs: {cmd: x}\n")
    assert issue == "line 4, column 5: YAML error: key 'name' appears twice in the same mapping"


def test_duplicate_json_keys_are_errors() -> None:
    (issue,) = _issues('{"name": "a", "name": "b", "tasks": []}')
    assert "key 'name' appears twice" in issue


def test_json_nan_is_rejected() -> None:
    (issue,) = _issues('{"name": "a", "tasks": [], "default_task_timeout_s": NaN}')
    assert "NaN is not valid JSON" in issue


def test_yaml_nan_and_infinity_are_rejected() -> None:
    issues = issues_of(
        "name: wf\ndefault_task_timeout_s: .inf\ntasks:\n  - name: a\n    kwargs: {cmd: x}\n"
    )
    assert [i.location for i in issues] == ["default_task_timeout_s"]


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    lines.append("name: wf\ntasks: *a8")
    (issue,) = _issues("\n".join(lines))
    assert "expands to more than" in issue


def test_yaml_aliases_for_reuse_are_fine() -> None:
    text = (
        "name: wf\n"
        "tasks:\n"
        "  - name: a\n    kwargs: &k {cmd: 'echo hi', env: {A: '1'}}\n"
        "  - name: b\n    kwargs: *k\n"
    )
    wf = compile_text(text)
    assert [t.env for t in wf.tasks] == [{"A": "1"}, {"A": "1"}]


def test_yaml_python_tags_are_not_executed() -> None:
    (issue,) = _issues("name: !!python/object/apply:os.system ['echo pwned']\ntasks: []\n")
    assert "YAML error" in issue
    assert "python/object/apply" in issue


def test_oversized_definition_is_refused_before_parsing() -> None:
    (issue,) = _issues(b"#" * (MAX_DEFINITION_BYTES + 1))
    assert issue.startswith("(file): the definition is 16,777,217 bytes; the limit is 16,777,216")


def test_every_shape_issue_is_reported_at_once() -> None:
    definition = workflow(
        task("a", queue=3),
        task("b", dep_policy="none"),
        task("c", kwargs_typo=1),
    )
    assert {i.task for i in issues_of(definition)} == {"a", "b", "c"}
