"""Pass 3, budgets: stop when the expansion made too many tasks or too many bytes.

Everything after this pass costs work per task and per edge; past ``MAX_TASKS`` tasks or
``MAX_EXPANDED_BYTES`` of commands and environments, that work could only report more of the same,
so the compilation ends here with what it found. The expansion pass charges each task it makes to
the byte budget (``charge``) and stops making tasks once either budget is spent (``spent``).
"""

from __future__ import annotations

from shared.definition.compilation import Compilation
from shared.limits import MAX_EXPANDED_BYTES, MAX_TASKS


def check_budgets(c: Compilation) -> None:
    """Raise ``DefinitionError`` (every issue so far) when a budget was spent."""
    if len(c.owner) > MAX_TASKS:
        c.issues.add(
            "tasks",
            f"the workflow has more than {MAX_TASKS:,} tasks after foreach expansion",
        )
        raise c.stop()
    if c.expanded_left < 0:
        raise c.stop()  # (reported by ``charge``)


def spent(c: Compilation) -> bool:
    """Whether the expansion made more tasks or bytes than the limits allow."""
    return len(c.owner) > MAX_TASKS or c.expanded_left < 0


def charge(c: Compilation, own_bytes: int) -> bool:
    """Count one more task's cmd and env (with the workflow's); False, reported once, when they
    add up to more than MAX_EXPANDED_BYTES."""
    left = c.expanded_left
    c.expanded_left -= own_bytes + c.workflow_env_bytes
    if c.expanded_left < 0 <= left:
        c.issues.add(
            "tasks",
            f"the tasks' commands and environments (workflow env included) add up to more"
            f" than {MAX_EXPANDED_BYTES:,} bytes after foreach expansion (the limit): put"
            " long scripts and large values in files, and keep the workflow env small",
        )
    return c.expanded_left >= 0
