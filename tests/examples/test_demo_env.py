"""``make demo KEEP=1``'s ``.run/demo/stack.env``: what a shell that sources it gives the ``dagq``
CLI and a worker is exactly the kept stack (its API URL, storage and prefix), in the names they
read; and ``.run/`` is git-ignored, so it never shows up as a change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devtools.demo import EXAMPLES, DemoStack, forget_stack_env, write_stack_env
from devtools.stackenv import read_env, source_line
from shared.client.config import ClientConfig
from shared.settings import Settings, azurite_connection_string

REPO_ROOT = Path(__file__).resolve().parents[2]


def kept_stack(run_dir: Path) -> DemoStack:
    """A stack as ``DemoStack.start`` leaves it (no process is started here)."""
    stack = DemoStack(run_dir)
    stack.api_url = "http://127.0.0.1:43210"
    storage = azurite_connection_string(blob=43211, queue=43212, table=43213)
    stack.env = {"DAGQ_STORAGE": storage, "DAGQ_PREFIX": "demo"}
    return stack


def sourced(line: str, cwd: Path) -> dict[str, str]:
    """The environment a fresh shell exports after running ``line`` (nothing inherited)."""
    done = subprocess.run(
        ["/bin/sh", "-c", f"{line} && env -0"], cwd=cwd, env={}, capture_output=True, check=True
    )
    pairs = (item.decode().partition("=") for item in done.stdout.split(b"\0") if item)
    return {name: value for name, _, value in pairs if name.startswith("DAGQ_")}


def test_sourcing_stack_env_gives_the_cli_and_workers_the_kept_stack(tmp_path: Path) -> None:
    stack = kept_stack(tmp_path / "run")
    env_file = tmp_path / "stack.env"
    write_stack_env(stack, env_file)

    line = source_line(env_file)
    assert line == f". {env_file}"  # outside the working directory: the absolute path
    env = sourced(line, cwd=REPO_ROOT)
    assert env == read_env(env_file)
    assert ClientConfig.resolve(env=env).api_url == stack.api_url  # what `dagq` talks to
    settings = Settings.model_validate(env)  # what a worker and the app read
    assert settings.storage_connection_string == stack.env["DAGQ_STORAGE"]
    assert settings.prefix == "demo"
    assert env["DAGQ_EXAMPLES_DIR"] == str(EXAMPLES)  # the pipeline's scripts, for a new worker
    # The one secret in it is Azurite's well-known development key.
    assert "AccountName=devstoreaccount1;" in env["DAGQ_STORAGE"]


def test_the_printed_line_is_relative_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".run" / "demo").mkdir(parents=True)
    env_file = tmp_path / ".run" / "demo" / "stack.env"
    write_stack_env(kept_stack(tmp_path / "run"), env_file)
    monkeypatch.chdir(tmp_path)
    assert source_line(env_file) == ". .run/demo/stack.env"
    assert sourced(source_line(env_file), cwd=tmp_path)["DAGQ_PREFIX"] == "demo"


def test_the_file_is_removed_with_its_stack_but_not_a_later_ones(tmp_path: Path) -> None:
    mine, later = kept_stack(tmp_path / "a"), kept_stack(tmp_path / "b")
    later.api_url = "http://127.0.0.1:43299"
    env_file = tmp_path / "stack.env"
    write_stack_env(later, env_file)
    forget_stack_env(mine, env_file)
    assert env_file.exists()
    forget_stack_env(later, env_file)
    assert not env_file.exists()
    forget_stack_env(later, env_file)  # already gone: nothing to do


def test_run_is_git_ignored() -> None:
    for path in (".run/demo/stack.env", ".run/demo/20261202-012233/outputs.json"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO_ROOT, check=False)
        assert ignored.returncode == 0, f"{path} is not git-ignored"


def test_the_file_alone_puts_the_dagq_command_on_path(tmp_path: Path) -> None:
    """``. .run/demo/stack.env`` in a fresh shell (no virtualenv activated) is enough to type
    ``dagq``: the file puts the virtualenv's bin folder first on PATH, keeping the rest."""
    env_file = tmp_path / "stack.env"
    write_stack_env(kept_stack(tmp_path / "run"), env_file)
    line = f'{source_line(env_file)} && command -v dagq && echo "$PATH"'
    done = subprocess.run(
        ["/bin/sh", "-c", line], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found, path = done.stdout.splitlines()
    assert Path(found) == Path(sys.executable).parent / "dagq"
    assert path == f"{Path(sys.executable).parent}:/usr/bin:/bin"
