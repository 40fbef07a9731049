"""Hostile values and the real shells they are tried in: what the templating's and the
parameters' shell-safety tests share."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SHELLS = sorted({os.path.realpath(sh) for sh in ("/bin/sh", shutil.which("bash")) if sh})
"""Every shell a worker might be: /bin/sh is dash on Debian, bash on others."""


PAYLOADS = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "'; touch PWNED; '",
    '"; touch PWNED; "',
    "x\ntouch PWNED\n",
    "'\ntouch PWNED\n#",
    "a[$(touch PWNED)]",
    "\\'$(touch PWNED)\\'",
    "$'\\x27'; touch PWNED; $'\\x27'",
    "}; touch PWNED; {",
    ")); touch PWNED; ((",
    "EOF\ntouch PWNED\nEOF",
]
"""Values that create ./PWNED if any shell ever reads them as code."""


def run(shell: str, cmd: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [shell, "-c", cmd],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
        check=False,
    )


FRAGMENTS = [
    " ", "echo ", "printf %s ", "true", ";", "\n", " && ", " | ", "'", '"', "\\", "$", "$(", "(",
    ")", "${X:-", "}", "`", "$'", "#", "<<EOF\n", "\nEOF\n", "$((", "))", "[[ ", " ]]", "x=",
    "a", "-", "case a in a) ", " esac", ":", "{ ", "; }", "\\\n", "[", "]", "=", "arr",
    "> /dev/null", "$x", '"$x"', "((", "1",
]  # fmt: skip
"""Shell syntax to build commands from (nothing here creates ./PWNED by itself)."""
