"""Templating cannot inject shell: placeholders the shell would not read as one plain word are
refused, every value also reaches the task as DAGQ_VAR_<name>, and a real shell proves both."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.definition.templating import (
    env_var_name,
    parse_command,
    parse_template,
    variable_env,
)
from shared.errors import TemplateSyntaxError
from tests.definition.helpers import compile_dict, issues_of, one_issue, task, workflow
from tests.definition.shell_cases import FRAGMENTS, PAYLOADS, SHELLS, run

REPORTED = ['echo "{{ v }}"', "echo '{{ v }}'", "python3 -c \"print('{{ v }}')\""]
"""The three commands of the report (issue 11 §4) that ran the value."""


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    assert not (tmp_path / "PWNED").exists(), "a value ran as shell code"


@pytest.mark.parametrize("cmd", REPORTED)
def test_the_reported_commands_ran_the_value_and_are_now_refused(cmd: str, tmp_path: Path) -> None:
    # What dagq rendered before: each value shell-quoted, even inside quotes. The shell runs it.
    rendered = parse_template(cmd).render({"v": "$(touch PWNED)"}, quote=True)
    run("/bin/sh", rendered, tmp_path)
    assert (tmp_path / "PWNED").exists()
    # Now the definition is refused, at the task and field, with the fix in the message.
    issue = one_issue(
        workflow(task("t", cmd, foreach={"v": ["$(touch PWNED)"]})),
        location="tasks.t.kwargs.cmd",
        contains="{{ v }} is inside ",
    )
    assert issue.task == "t"
    assert '"$DAGQ_VAR_v"' in issue.message
    assert 'os.environ["DAGQ_VAR_v"]' in issue.message
    assert "outside any quotes" in issue.message


def test_every_foreach_parameter_is_an_environment_variable(workdir: Path) -> None:
    wf = compile_dict(
        workflow(
            task(
                "t",
                'printf "%s|%s" "$DAGQ_VAR_v" "$DAGQ_VAR_n" > out',
                foreach=[{"v": p, "n": i} for i, p in enumerate(PAYLOADS)],
            )
        )
    )
    for expansion, payload in zip(wf.tasks, PAYLOADS, strict=True):
        assert expansion.env["DAGQ_VAR_v"] == payload
        for shell in SHELLS:
            run(shell, expansion.cmd, workdir, expansion.env)
            n = PAYLOADS.index(payload)
            assert (workdir / "out").read_text() == f"{payload}|{n}"


@pytest.mark.parametrize(
    ("cmd", "where"),
    [
        ('echo "a {{ v }} b"', "inside double quotes"),
        ("echo '{{ v }}'", "inside single quotes"),
        ("echo $'{{ v }}'", "inside $'...'"),
        ("echo ${X:-{{ v }}}", "inside ${...}"),
        ("echo done # {{ v }}", "in a comment"),
        ("echo \\{{ v }}", "right after a backslash"),
        ("echo ${{ v }}", "right after a '$'"),
        ("echo {{ v }} `date`", "backticks"),
        ("cat <<EOF\n{{ v }}\nEOF", "here-document"),
        ("echo $(( {{ v }} + 1 ))", "arithmetic"),
        ('x={{ v }}; eval "$x"', "eval"),
        ("[[ {{ v }} -eq 1 ]]", "[["),
        ('echo "$(echo {{ v }})"', "inside double quotes"),
        ("echo {{ v }})", "unbalanced ')'"),
        # Before: words were matched as text, so a spelled-out eval or trap went through.
        ("\\eval echo {{ v }}", "eval"),
        ("e\\val echo {{ v }}", "eval"),
        ('"eval" echo {{ v }}', "eval"),
        ("'eval' echo {{ v }}", "eval"),
        ("ev''al echo {{ v }}", "eval"),
        ("trap {{ v }} EXIT", "trap"),
        ("true; trap -- {{ v }} EXIT", "trap"),
        (". {{ v }}", ". (it runs a file"),
        ("source {{ v }}", "source"),
        ("command eval {{ v }}", "eval"),
        ("builtin eval {{ v }}", "eval"),
        ("exec env -i X=1 eval {{ v }}", "eval"),
        ("X=1 /usr/bin/env eval {{ v }}", "eval"),
        ("if true; then eval {{ v }}; fi", "eval"),
        ("sh -c {{ v }}", "sh -c"),
        ("bash -ec 'echo '{{ v }}", "bash -c"),
        ("echo x | /bin/sh -x -c {{ v }} name", "sh -c"),
    ],
)
def test_unsafe_placements_are_refused(cmd: str, where: str) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        parse_command(cmd)
    assert where in str(info.value)


@pytest.mark.parametrize(
    "cmd",
    [
        "train --seed {{ v }} --out=runs/{{ v }}.json",
        'out=$(prog {{ v }}) && echo "$out"',
        "(cd /tmp && echo {{ v }})",
        'python3 "${DAGQ_EXAMPLES_DIR:?set it}/train.py" --lr {{ v }}',
        "echo a#{{ v }} 'quoted text' \"$HOME\" \\\n  --next {{ v }}",
        "docker run img --name {{ v }} # a comment after it is fine",
        "find . -name {{ v }} > . 2>/dev/null; ls . {{ v }}",
        "echo trap source . {{ v }}",  # words that are arguments, not commands
        "sh -c 'echo \"$1\"' name {{ v }}",  # the value is an argument of the code, not code
    ],
)
def test_plain_word_placements_are_accepted_and_stay_one_word(cmd: str, workdir: Path) -> None:
    template = parse_command(cmd)
    for payload in PAYLOADS:
        for shell in SHELLS:
            run(shell, template.render({"v": payload}, quote=True), workdir)


def test_only_foreach_parameters_collide_with_dagq_var_names() -> None:
    issues = issues_of(
        workflow(
            task(
                "t",
                "echo {{ seed }}",
                foreach={"seed": [1]},
                kwargs={"cmd": "echo {{ seed }}", "env": {"DAGQ_VAR_seed": "x"}},
            ),
            env={"DAGQ_VAR_seed": "y", "DAGQ_VAR_other": "fine"},
        )
    )
    assert {i.location for i in issues} == {
        "tasks.t.kwargs.env.DAGQ_VAR_seed",
        "env.DAGQ_VAR_seed",
    }
    assert all("set by dagq to the value of foreach parameter 'seed'" in i.message for i in issues)


def test_variable_env_names() -> None:
    assert env_var_name("seed") == "DAGQ_VAR_seed"
    assert env_var_name("item.lr") == "DAGQ_VAR_item_lr"
    assert variable_env({"item": {"lr": 0.1}, "item.lr": 0.1, "ok": True, "n": None}) == {
        "DAGQ_VAR_item": '{"lr":0.1}',
        "DAGQ_VAR_item_lr": "0.1",
        "DAGQ_VAR_ok": "true",
        "DAGQ_VAR_n": "null",
    }
    with pytest.raises(TemplateSyntaxError, match="would both be passed as DAGQ_VAR_a_b"):
        variable_env({"a.b": 1, "a_b": 2})


def test_dotted_placeholders_render_for_a_dynamic_fan_out() -> None:
    template = parse_command("fit --lr {{ item.lr }} --all {{ item }}")
    assert template.variables == ("item.lr", "item")
    rendered = template.render({"item": {"lr": 0.1, "x": "a b"}, "item.lr": 0.1}, quote=True)
    assert rendered == 'fit --lr 0.1 --all \'{"lr":0.1,"x":"a b"}\''


def test_a_value_with_a_line_break_is_read_from_its_variable() -> None:
    template = parse_command("run {{ v }} --seed {{ s }}")
    rendered = template.render({"v": "a\nb", "s": 1}, quote=True)
    assert rendered == 'run "$DAGQ_VAR_v" --seed 1'
    assert variable_env({"v": "a\nb", "s": 1})["DAGQ_VAR_v"] == "a\nb"


@pytest.mark.parametrize("shell", SHELLS)
def test_bash_error_recovery_cannot_run_the_next_line_of_a_value(
    shell: str, tmp_path: Path
) -> None:
    # Found by the property below: bash drops a line it cannot parse and runs the next one, so a
    # quoted value's second line ran in a command that was not valid shell.
    cmd = "x=(      ; }{{ v }}"
    payload = "x\ntouch PWNED\n"
    rendered = parse_command(cmd).render({"v": payload}, quote=True)
    run(shell, rendered, tmp_path, env=variable_env({"v": payload}))
    assert not (tmp_path / "PWNED").exists(), rendered


@st.composite
def commands(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.sampled_from([*FRAGMENTS, "{{ v }}"]), min_size=1, max_size=14))
    pieces.insert(draw(st.integers(0, len(pieces))), "{{ v }}")
    return "".join(pieces)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands(), st.sampled_from(PAYLOADS))
def test_an_accepted_command_never_runs_a_value(cmd: str, payload: str) -> None:
    try:
        template = parse_command(cmd)
    except TemplateSyntaxError:
        return
    rendered = template.render({"v": payload}, quote=True)
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"dagq-templating-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    try:
        for shell in SHELLS:  # with the task's DAGQ_VAR_* variables, as a worker runs it
            run(shell, rendered, scratch, env=variable_env({"v": payload}))
            assert not (scratch / "PWNED").exists(), (shell, cmd, rendered)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
