"""The ``stack.env`` file of a local stack: where its API and storage are, for the CLI and workers.

``make up`` writes ``.run/stack.env`` and ``make demo KEEP=1`` writes ``.run/demo/stack.env``, both
here: ``export NAME='value'`` lines, so one line in a shell (``. .run/demo/stack.env``) gives the
``dagq`` CLI (``DAGQ_API_URL``) and a worker (``DAGQ_STORAGE``, ``DAGQ_PREFIX``) that stack, and
puts ``.venv/bin`` on PATH (no virtualenv to activate first). It
holds the stack's own Azurite key (``devtools.azurite.new_account_key``), so it is written for its
owner only (0600), like ``stack.json``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path


def write_env(path: Path, values: Mapping[str, str]) -> None:
    """Write ``values`` as ``export NAME=value`` lines (shell-quoted: a connection string holds
    ``;``), then a line that puts this virtualenv's ``bin`` (where ``dagq`` and ``dagq-worker``
    are) first on PATH, so sourcing the file alone gives a shell the ``dagq`` command."""
    lines = [f"export {name}={shlex.quote(value)}\n" for name, value in values.items()]
    lines.append(f'export PATH={shlex.quote(str(bin_dir()))}:"$PATH"\n')
    write_private(path, "".join(lines))


def bin_dir() -> Path:
    """The folder of this Python's scripts (``.venv/bin`` under ``make install``)."""
    return Path(sys.executable).parent


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable and writable by its owner only (0600) from the start:
    it holds a stack's storage key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an older file kept its mode through O_TRUNC
        handle.write(text)


def read_env(path: Path) -> dict[str, str]:
    """The variables of a stack.env file, as a shell that sources it sees them (but PATH, which
    extends the shell's own)."""
    values = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            words = words[1:]
        for word in words:
            name, sep, value = word.partition("=")
            if sep and name and name != "PATH":
                values[name] = value
    return values


def source_line(path: Path) -> str:
    """The shell line that loads ``path``: relative to the working directory when under it."""
    try:
        shown = str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        shown = str(path)
    return f". {shlex.quote(shown if os.sep in shown else './' + shown)}"
