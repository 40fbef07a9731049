"""Parameter values are data, never shell: property tests over the compiler's commands with
``{{ params.v }}``, run by real shells with the ``DAGQ_PARAM_*`` variables a worker sets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.definition.compiler import compile_text
from shared.definition.parameters import as_text
from shared.errors import DefinitionError
from tests.definition.shell_cases import FRAGMENTS, PAYLOADS, SHELLS, run


def compiled_cmd(cmd: str, value: str) -> tuple[str, dict[str, str]] | None:
    """The task's command and the parameter variables its worker sets, or None if refused."""
    definition = {
        "name": "w",
        "params": {"v": ""},
        "tasks": [{"name": "t", "kwargs": {"cmd": cmd}}],
    }
    try:
        wf = compile_text(json.dumps(definition), fmt="json", params={"v": value})
    except DefinitionError:
        return None
    env = {f"DAGQ_PARAM_{name}": text for name, text in as_text(wf.params).items()}
    return wf.tasks[0].cmd, env


@st.composite
def commands(draw: st.DrawFn) -> str:
    piece = st.sampled_from([*FRAGMENTS, "{{ params.v }}"])
    pieces = draw(st.lists(piece, min_size=1, max_size=14))
    pieces.insert(draw(st.integers(0, len(pieces))), "{{ params.v }}")
    return "".join(pieces)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands(), st.sampled_from(PAYLOADS))
def test_an_accepted_command_never_runs_a_parameter_value(cmd: str, payload: str) -> None:
    found = compiled_cmd(cmd, payload)
    if found is None:
        return
    rendered, env = found
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"dagq-params-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    try:
        for shell in SHELLS:
            run(shell, rendered, scratch, env=env)
            assert not (scratch / "PWNED").exists(), (shell, cmd, rendered)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


VALUES = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_a_parameter_reaches_the_program_as_exactly_one_word(value: str) -> None:
    found = compiled_cmd('printf %s {{ params.v }} > out; printf %s "$DAGQ_PARAM_v" > var', value)
    assert found is not None
    rendered, env = found
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"dagq-params-word-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    try:
        for shell in SHELLS:
            subprocess.run(
                [shell, "-c", rendered], cwd=scratch, env={**os.environ, **env},
                stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=True,
            )  # fmt: skip
            assert (scratch / "out").read_bytes().decode("utf-8", "surrogateescape") == value
            assert (scratch / "var").read_bytes().decode("utf-8", "surrogateescape") == value
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
