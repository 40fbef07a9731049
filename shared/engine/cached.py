"""A dispatch answered from the result cache: the attempt completes without running.

The coordinator found an entry for the attempt's cache key (``shared.caching``) and gives the
engine the completion it stands for: it is applied exactly like a worker's (children become
ready, the output is available downstream) and the task remembers where the result came from.
"""

from __future__ import annotations

from shared.caching.entry import CachedFrom
from shared.definition.workflow import CompiledWorkflow
from shared.engine.commands import Command
from shared.engine.expansion import expanded
from shared.engine.state import COMPLETED, RuntimeState
from shared.engine.transitions import apply
from shared.messages import TaskCompletedEvent


def complete_from_cache(
    wf: CompiledWorkflow,
    state: RuntimeState,
    completion: TaskCompletedEvent,
    origin: CachedFrom,
    now: float,
    lists: dict[str, object] | None = None,
) -> list[Command]:
    """Apply ``completion`` (an attempt just dispatched, answered from the cache) and record
    ``origin`` on the task if it completed; return the commands it causes. ``lists``: as for
    ``apply``, the list a ``foreach_from`` source's blob output holds."""
    commands = apply(wf, state, completion, now, lists=lists)
    i = expanded(wf, state).index[completion.task]
    if state.codes[i] == COMPLETED and state.attempt[i] == completion.attempt:
        state.note_cached(i, origin)
    return commands
