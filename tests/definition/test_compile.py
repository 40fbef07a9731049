"""Compiling: every validation error names the task and the field; valid definitions compile
to the documented CompiledWorkflow."""

from __future__ import annotations

import pytest

from shared.definition.compiler import compile_text, compile_workflow, parse_definition
from shared.definition.workflow import RetryPolicy
from shared.errors import DefinitionError
from shared.limits import MAX_CMD_BYTES, MAX_DEPENDENCIES, MAX_ENV_BYTES, MAX_EXPANSIONS, MAX_TASKS
from tests.definition.helpers import compile_dict, issues_of, one_issue, task, workflow

# -- what a valid definition compiles to -------------------------------------------------------


def test_defaults_and_resolution() -> None:
    wf = compile_dict(
        workflow(
            task("prep", queue="cpu"),
            task("train", depends_on=["prep"], timeout_s=30, num_retries=2),
            task("report", depends_on=["train"], dep_policy="all_settled"),
            default_queue="gpu",
            default_task_timeout_s=600,
            max_parallelism=3,
            result_policy="all_tasks_succeed",
        )
    )
    prep, train, report = wf.tasks
    assert (prep.queue, train.queue, report.queue) == ("cpu", "gpu", "gpu")
    assert (prep.timeout_s, train.timeout_s) == (600, 30)
    assert train.num_retries == 2
    assert prep.num_retries == 0
    assert train.retry == RetryPolicy()
    assert report.dep_policy == "all_settled"
    assert prep.dep_policy == "all"
    assert (train.parents, report.parents) == ((0,), (1,))
    assert wf.children == ((1,), (2,), ())
    assert wf.index == {"prep": 0, "train": 1, "report": 2}
    assert (wf.roots, wf.sinks, wf.queues) == ((0,), (2,), ("cpu", "gpu"))
    assert (wf.max_parallelism, wf.result_policy) == (3, "all_tasks_succeed")


def test_tasks_keep_definition_order_whatever_the_dependencies() -> None:
    wf = compile_dict(workflow(task("z", depends_on=["a"]), task("a")))
    assert [t.name for t in wf.tasks] == ["z", "a"]
    assert wf.tasks[0].parents == (1,)


def test_workflow_env_is_merged_under_task_env() -> None:
    wf = compile_dict(
        workflow(
            {"name": "a", "kwargs": {"cmd": "x", "env": {"B": "task", "C": "c"}}},
            task("b"),
            env={"A": "wf", "B": "wf"},
        )
    )
    assert wf.tasks[0].env == {"A": "wf", "B": "task", "C": "c"}
    assert wf.tasks[1].env == {"A": "wf", "B": "wf"}


def test_retry_and_queue_timeout() -> None:
    retry = {
        "initial_delay_s": 5,
        "multiplier": 3,
        "max_delay_s": 60,
        "jitter": 0.5,
        "retry_on_exit_codes": [75, 137],
    }
    wf = compile_dict(workflow(task("a", num_retries=3, retry=retry, queue_timeout_s=900)))
    (a,) = wf.tasks
    assert a.retry == RetryPolicy(5, 3, 60, 0.5, (75, 137))
    assert a.queue_timeout_s == 900


def test_cwd_and_condition_are_carried() -> None:
    wf = compile_dict(
        workflow(
            task("a"),
            {
                "name": "b",
                "kwargs": {"cmd": "x", "cwd": "/data"},
                "depends_on": ["a"],
                "condition": "inputs.a.ok == true",
            },
        )
    )
    assert wf.tasks[1].cwd == "/data"
    assert wf.tasks[1].condition == "inputs.a.ok == true"


def test_source_text_is_kept() -> None:
    text = "name: wf\ntasks:\n  - name: a\n    kwargs: {cmd: 'true'}\n"
    assert compile_text(text).source == text
    assert compile_workflow(parse_definition(text), source_text="x").source == "x"
    assert compile_workflow(parse_definition(text)).source is None


def test_ai4s_jobq_format_runs_unchanged() -> None:
    text = """\
name: jobq-etl
default_queue: cpu
default_task_timeout_s: 120
max_parallelism: 4
result_policy: all_sinks_succeed
tasks:
  - name: extract-a
    kwargs:
      cmd: echo "extracting shard a"
    queue: null
    num_retries: 0
    timeout_s: null
    depends_on: []
  - name: extract-b
    kwargs:
      cmd: echo "extracting shard b"
      env: {SHARD: b}
      cwd: /tmp
  - name: transform
    depends_on: [extract-a, extract-b]
    dep_policy: 1
    timeout_s: 60
    num_retries: 2
    queue: gpu
    kwargs:
      cmd: echo transform
  - name: load
    depends_on: [transform]
    dep_policy: any
    condition: inputs.transform.rows > 0
    kwargs:
      cmd: echo loaded
"""
    wf = compile_text(text, source="jobq.yaml")
    assert [t.name for t in wf.tasks] == ["extract-a", "extract-b", "transform", "load"]
    assert [t.queue for t in wf.tasks] == ["cpu", "cpu", "gpu", "cpu"]
    assert [t.timeout_s for t in wf.tasks] == [120, 120, 60, 120]
    assert wf.tasks[2].dep_policy == 1
    assert wf.tasks[3].dep_policy == "any"


# -- every validation error ------------------------------------------------------------------


def test_empty_workflow() -> None:
    one_issue(workflow(), location="tasks", contains="the workflow has no tasks")


def test_empty_workflow_name() -> None:
    one_issue(workflow(task("a"), name=" "), location="name", contains="must not be empty")


def test_duplicate_names() -> None:
    issue = one_issue(
        workflow(task("a"), task("b"), task("a")),
        location="tasks.a.name",
        contains="duplicate task name 'a' (also tasks[0])",
    )
    assert issue.task == "a"


def test_duplicate_created_by_foreach() -> None:
    issue = one_issue(
        workflow(task("t.i=1"), task("t", foreach={"i": [1, 2]})),
        location="tasks.t.foreach",
        contains="expansion 't.i=1' has the same name as task 't.i=1'",
    )
    assert issue.task == "t"


def test_foreach_task_and_plain_task_with_the_same_name() -> None:
    one_issue(
        workflow(task("t", foreach={"i": [1, 2]}), task("t")),
        location="tasks.t.name",
        contains="duplicate task name 't' (also tasks[0])",
    )


def test_foreach_task_named_like_another_expansion() -> None:
    one_issue(
        workflow(task("a", foreach={"x": [1]}), task("a.x=1", foreach={"y": [2]})),
        location="tasks.a.x=1.name",
        contains="foreach task name 'a.x=1' is also the name of another task",
    )


def test_plain_task_named_like_an_expansion() -> None:
    one_issue(
        workflow(task("t", foreach={"i": [1, 2]}), task("t.i=2")),
        location="tasks.t.i=2.name",
        contains="an expansion of foreach task 't' has it too",
    )


@pytest.mark.parametrize(
    "name", ["../etc", "a/b", "a b", "-x", ".hidden", "x" * 129, "tab\there", "é"]
)
def test_names_outside_the_safe_charset(name: str) -> None:
    issue = one_issue(workflow(task(name)), location="tasks[0].name", contains="invalid task name")
    assert issue.task == name


def test_unknown_dependency_suggests_a_close_name() -> None:
    issue = one_issue(
        workflow(task("prepare"), task("train", depends_on=["prepar"])),
        location="tasks.train.depends_on",
        contains="unknown dependency 'prepar'; did you mean 'prepare'?",
    )
    assert issue.task == "train"


def test_self_dependency() -> None:
    one_issue(
        workflow(task("a", depends_on=["a"])),
        location="tasks.a.depends_on",
        contains="task 'a' depends on itself",
    )


def test_dependency_listed_twice() -> None:
    one_issue(
        workflow(task("a"), task("b", depends_on=["a", "a"])),
        location="tasks.b.depends_on",
        contains="dependency 'a' is listed twice",
    )


def test_dependency_listed_twice_through_a_group() -> None:
    one_issue(
        workflow(task("t", foreach={"i": [1, 2]}), task("b", depends_on=["t", "t.i=2"])),
        location="tasks.b.depends_on",
        contains="'t.i=2' and 't' both include 't.i=2'",
    )


def test_cycle_names_its_tasks_in_order() -> None:
    issue = one_issue(
        workflow(
            task("a", depends_on=["c"]),
            task("b", depends_on=["a"]),
            task("c", depends_on=["b"]),
            task("d", depends_on=["c"]),
        ),
        location="tasks.a.depends_on",
        contains="dependency cycle: 'a', which depends on 'c', which depends on 'b', which"
        " depends on 'a'",
    )
    assert "(tasks in the cycle: a, c, b)" in issue.message
    assert "'d'" not in issue.message  # downstream of the cycle, not on it


def test_cycle_through_a_foreach_group() -> None:
    issue = one_issue(
        workflow(
            task("t", foreach={"i": [1, 2]}, depends_on=["b"]), task("b", depends_on=["t.i=1"])
        ),
        location="tasks.t.depends_on",
        contains="dependency cycle: 't', which depends on 'b', which depends on 't'",
    )
    assert issue.task == "t"


def test_task_depending_on_its_own_expansion() -> None:
    one_issue(
        workflow(task("t", foreach={"i": [1, 2]}, depends_on=["t.i=1"])),
        location="tasks.t.depends_on",
        contains="depends on its own expansion 't.i=1'",
    )


def test_dep_policy_larger_than_the_dependencies() -> None:
    issue = one_issue(
        workflow(task("a"), task("b"), task("c", depends_on=["a", "b"], dep_policy=3)),
        location="tasks.c.dep_policy",
        contains="dep_policy 3 needs 3 successful dependencies but the task has only 2",
    )
    assert issue.task == "c"


def test_dep_policy_counts_foreach_expansions() -> None:
    wf = compile_dict(
        workflow(task("t", foreach={"i": [1, 2, 3]}), task("c", depends_on=["t"], dep_policy=3))
    )
    assert wf.tasks[-1].parents == (0, 1, 2)


def test_condition_without_dependencies() -> None:
    one_issue(
        workflow(task("a", condition="true")),
        location="tasks.a.condition",
        contains="the task has none",
    )


def test_condition_reading_a_non_parent() -> None:
    issue = one_issue(
        workflow(task("a"), task("b"), task("c", depends_on=["a"], condition="inputs.b.ok")),
        location="tasks.c.condition",
        contains="reads 'b', which is not a dependency of this task (dependencies: a)",
    )
    assert issue.task == "c"


def test_condition_syntax_error() -> None:
    one_issue(
        workflow(task("a"), task("c", depends_on=["a"], condition="inputs.a.x >")),
        location="tasks.c.condition",
        contains="syntax error",
    )


@pytest.mark.parametrize("queue", ["bad queue", "a--b", "x" * 41, "q/1", ""])
def test_invalid_queue_names(queue: str) -> None:
    issue = one_issue(
        workflow(task("a", queue=queue)), location="tasks.a.queue", contains="queue name"
    )
    assert issue.task == "a"


def test_invalid_default_queue_is_reported_once() -> None:
    one_issue(
        workflow(task("a"), task("b"), default_queue="no good"),
        location="default_queue",
        contains="invalid queue name 'no good'",
    )


def test_cmd_limit() -> None:
    one_issue(
        workflow(task("a", "x" * (MAX_CMD_BYTES + 1))),
        location="tasks.a.kwargs.cmd",
        contains="the limit is 16,384",
    )


def test_empty_cmd() -> None:
    one_issue(workflow(task("a", "  ")), location="tasks.a.kwargs.cmd", contains="cmd is empty")


def test_env_limit_includes_the_workflow_env() -> None:
    big = "v" * (MAX_ENV_BYTES // 2)
    one_issue(
        workflow({"name": "a", "kwargs": {"cmd": "x", "env": {"A": big}}}, env={"B": big}),
        location="tasks.a.kwargs.env",
        contains="the environment (workflow env + task env)",
    )


def test_env_names_and_values() -> None:
    issues = issues_of(
        workflow({"name": "a", "kwargs": {"cmd": "x", "env": {"A=B": "1", "C": "nul\x00"}}})
    )
    assert {(i.location, i.task) for i in issues} == {
        ("tasks.a.kwargs.env.A=B", "a"),
        ("tasks.a.kwargs.env.C", "a"),
    }


def test_cwd_with_control_characters() -> None:
    one_issue(
        workflow({"name": "a", "kwargs": {"cmd": "x", "cwd": "/tmp/\nx"}}),
        location="tasks.a.kwargs.cwd",
        contains="without control characters",
    )


def test_too_many_expansions() -> None:
    side = int(MAX_EXPANSIONS**0.5) + 1
    one_issue(
        workflow(task("t", foreach={"a": list(range(side)), "b": list(range(side))})),
        location="tasks.t.foreach",
        contains=f"foreach expands to {side * side:,} tasks; the limit is {MAX_EXPANSIONS:,}",
    )


def test_empty_foreach() -> None:
    one_issue(
        workflow(task("t", foreach={"a": [1], "b": []})),
        location="tasks.t.foreach",
        contains="foreach expands to no tasks",
    )


def test_too_many_tasks() -> None:
    groups = [
        task(f"g{i}", foreach={"i": list(range(MAX_EXPANSIONS))})
        for i in range(MAX_TASKS // MAX_EXPANSIONS)
    ]
    issue = one_issue(
        workflow(task("extra"), *groups),
        location="tasks",
        contains=f"more than {MAX_TASKS:,} tasks",
    )
    assert issue.task is None


def test_too_many_dependencies() -> None:
    n = MAX_DEPENDENCIES + 1
    one_issue(
        workflow(
            task("a", foreach={"i": list(range(n // 2 + 1))}),
            task("b", foreach={"i": list(range(n // 2))}),
            task("sink", depends_on=["a", "b"]),
        ),
        location="tasks.sink.depends_on",
        contains=f"the task has more than {MAX_DEPENDENCIES:,} dependencies after foreach fan-in",
    )


def test_all_problems_are_reported_at_once() -> None:
    issues = issues_of(
        workflow(
            task("a", depends_on=["missing"]),
            task("b", queue="bad queue"),
            task("c/d"),
            task("e", depends_on=["e"]),
            task("f", condition="true"),
            task("b"),
            task("t", "echo {{ nope }}", foreach={"x": [1]}),
        )
    )
    assert [i.location for i in issues] == [
        "tasks.b.queue",
        "tasks[2].name",
        "tasks.b.name",
        "tasks.t.kwargs",
        "tasks.a.depends_on",
        "tasks.e.depends_on",
        "tasks.f.condition",
    ]


def test_repeated_problem_of_many_expansions_is_summarised() -> None:
    issues = issues_of(
        workflow(task("t", foreach={"q": [f"bad {i}" for i in range(50)]}, queue="{{ q }}"))
    )
    assert len(issues) == 4
    assert issues[-1].message == "... and 47 more like the above"
    assert all(i.location == "tasks.t.queue" and i.task == "t" for i in issues)


def test_definition_error_message_lists_every_issue() -> None:
    with pytest.raises(DefinitionError) as info:
        compile_text(
            '{"name": "wf", "tasks": [{"name": "a", "kwargs": {"cmd": "x"},'
            ' "depends_on": ["b", "c"]}]}',
            source="f.json",
        )
    text = str(info.value)
    assert text.startswith("f.json: 2 problem(s) in the workflow definition:")
    assert "tasks.a.depends_on: unknown dependency 'b'" in text
    assert "tasks.a.depends_on: unknown dependency 'c'" in text
    assert [i.to_dict()["task"] for i in info.value.issues] == ["a", "a"]


def test_shape_and_graph_problems_are_reported_together() -> None:
    definition = workflow(
        task("a", depends_on=["c"]),
        {"name": "broken", "kwargs": {"cmd": "true", "envv": {}}},
        task("c", depends_on=["a"]),
        task("d", depends_on=["a"], dep_policy=3, queue="gpu!"),
        task("e", depends_on=["broken"]),
    )
    issues = issues_of(definition)
    found = {(issue.location, issue.task) for issue in issues}
    messages = " | ".join(str(issue) for issue in issues)
    assert ("tasks.broken.kwargs.envv", "broken") in found
    assert ("tasks.d.queue", "d") in found
    assert ("tasks.d.dep_policy", "d") in found
    assert "tasks in the cycle: a, c" in messages  # edges still point at the right tasks
    assert "unknown dependency 'broken'" not in messages  # its own problem is reported already


def test_workflow_level_shape_problems_stop_before_the_graph_checks() -> None:
    definition = workflow(task("a", depends_on=["a"]), max_parallelism="many")
    issues = issues_of(definition)
    assert [issue.location for issue in issues] == ["max_parallelism"]


def test_locations_keep_the_written_positions_when_a_task_is_left_out() -> None:
    definition = workflow({"name": "x", "kwargs": {}}, task("bad name"))
    locations = [issue.location for issue in issues_of(definition)]
    assert "tasks[1].name" in locations
