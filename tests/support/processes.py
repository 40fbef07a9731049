"""Process checks shared by the tests that start and stop real processes."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process. A zombie awaiting its reaper counts as dead, and so does a
    process that exits while we look (reading /proc of a vanishing pid raises ESRCH)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Fields after the parenthesised command name (which may itself hold spaces): state first.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
