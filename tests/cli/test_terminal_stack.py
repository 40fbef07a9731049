"""A task's bytes reach a terminal as text, never as the terminal's instructions (issue 33 §6):
the real app and a worker on Azurite, and the CLI run on a pseudo-terminal.

The task prints a clipboard write (OSC 52), a title, a screen clear, a hyperlink, a DCS string and
a C1 CSI, and fails with them (and rich markup) in its error. On a terminal `dagq logs`,
`dagq attempts` and `dagq status` show them as text; SGR colours of the log stay; `--raw` and a
pipe keep the bytes.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from devtools.testing.api_host import REPO_ROOT
from tests.support.stack import Result, Stack

Dagq = Callable[..., Result]

HOSTILE = r"""
name: hostile-bytes
default_queue: cpu
tasks:
  - name: loud
    kwargs:
      cmd: |
        printf 'start \033[31mred\033[0m \033]52;c;cHduZWQ=\007 \033]0;title\007 \033[2J'
        printf ' \033]8;;http://evil.example\033\\link\033]8;;\033\\'
        printf ' \033P1$qm\033\\ \302\233c end\n'
        printf 'fail \033]0;err-title\007 \302\2332J [link=http://evil.example]x[/link]\n' >&2
        exit 3
"""

INSTRUCTIONS = (b"\x1b]", b"\x1bP", b"\xc2\x9b", b"\x1b[2J", b"\x07")
"""OSC (clipboard, title, hyperlink), DCS, a C1 CSI, a screen clear, a bell."""


def _on_terminal(stack: Stack, *args: str) -> bytes:
    """``dagq ARGS`` with stdout and stderr on a pseudo-terminal; everything it wrote."""
    config = stack.logs / "no-config.toml"
    config.write_text("")
    env = {
        **os.environ, **stack.env, "DAGQ_API_URL": stack.url, "DAGQ_CONFIG": str(config),
        "COLUMNS": "300", "TERM": "xterm-256color",
    }  # fmt: skip
    env.pop("NO_COLOR", None)
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", *args],
        stdin=subprocess.DEVNULL, stdout=child, stderr=child, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    os.close(child)
    out = b""
    try:
        while chunk := os.read(main, 65536):
            out += chunk
    except OSError:  # EIO: the child closed the terminal
        pass
    finally:
        os.close(main)
    assert proc.wait(timeout=60) in (0, 1, 2, 3, 4, 5), out
    return out


@pytest.fixture(scope="module")
def failed_loud(stack: Stack) -> str:
    from shared.client import Client

    with Client(stack.url, None) as client:
        workflow_id = client.submit(HOSTILE).id
        deadline = time.monotonic() + 60
        while not client.get(workflow_id, tasks=False).is_terminal:
            assert time.monotonic() < deadline, stack.diagnostics()
            time.sleep(0.3)
    return workflow_id


def test_logs_on_a_terminal_show_instructions_as_text_and_keep_colours(
    stack: Stack, failed_loud: str
) -> None:
    out = _on_terminal(stack, "logs", failed_loud, "loud")
    for instruction in INSTRUCTIONS:
        assert instruction not in out, (instruction, out)
    assert b"\x1b[31mred\x1b[0m" in out  # SGR colours stay
    assert b"\\x1b]52;c;cHduZWQ=\\x07" in out  # shown, not run
    assert b"\\x9bc end" in out
    assert b"start" in out
    assert b"fail" in out


def test_logs_raw_and_logs_into_a_pipe_keep_the_bytes(
    stack: Stack, failed_loud: str, dagq: Dagq
) -> None:
    raw = _on_terminal(stack, "logs", failed_loud, "loud", "--raw")
    assert b"\x1b]52;c;cHduZWQ=\x07" in raw
    config = stack.logs / "no-config.toml"
    config.write_text("")
    piped = subprocess.run(
        [sys.executable, "-m", "shared.cli", "logs", failed_loud, "loud"],
        env={**os.environ, "DAGQ_API_URL": stack.url, "DAGQ_CONFIG": str(config)},
        capture_output=True, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert b"\x1b]52;c;cHduZWQ=\x07" in piped.stdout


@pytest.mark.parametrize("command", ["attempts", "status"])
def test_errors_in_tables_show_instructions_and_markup_as_text(
    stack: Stack, failed_loud: str, command: str
) -> None:
    args = ("attempts", failed_loud, "loud") if command == "attempts" else ("status", failed_loud)
    out = _on_terminal(stack, *args)
    for instruction in (*INSTRUCTIONS, b"\x1b]8;"):  # no hyperlink from [link=...] either
        assert instruction not in out, (instruction, out)
    assert b"\\x1b]0;err-title" in out
    assert b"[link=http://evil.example]" in out or command == "status", out


def test_json_output_stays_exact(stack: Stack, failed_loud: str, dagq: Dagq) -> None:
    result = dagq("attempts", failed_loud, "loud", "--json")
    assert result.code == 0
    (attempt,) = json.loads(result.out)["items"]
    assert "\x1b]0;err-title\x07" in attempt["error"]
