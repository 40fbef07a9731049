"""The CLI's integration fixture ``dagq``, over the real stack on the session's Azurite.

One stack per test module (``stack``, tests/support/stack.py, registered in tests/conftest.py):
the Functions app under the local host (devtools/testing/api_host.py) and two worker agents (queues
``cpu`` and ``gpu``) as subprocesses, all on a prefix of their own. The CLI runs in-process through
``shared.cli.main`` with ``--api-url`` pointing at the host.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from shared.cli import main
from tests.support.stack import Result, Stack


@pytest.fixture
def dagq(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Result]]:
    """Run ``dagq ARGS`` in-process against the stack; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("DAGQ_API_URL", stack.url)
    monkeypatch.delenv("DAGQ_API_KEY", raising=False)
    monkeypatch.setenv("DAGQ_CONFIG", str(stack.logs / "no-config.toml"))
    (stack.logs / "no-config.toml").write_text("")

    def run(*args: str, stdin: str | None = None) -> Result:
        capsys.readouterr()
        if stdin is not None:
            import io

            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run
